/**
 * Which addresses fetch refuses (issue 19): loopback, private, link-local (metadata) and the other
 * internal ranges, in IPv4, IPv6, and IPv4 written inside IPv6 (mapped, NAT64, 6to4).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { internalRange } from "../../../src/host/connectors/addresses.js";

const octet = fc.integer({ min: 0, max: 255 });
const hex = (a: number, b: number) => ((a << 8) | b).toString(16);

/** IPv4 addresses inside one of the internal ranges. */
const internalV4 = fc.oneof(
  fc.tuple(fc.constant(10), octet, octet, octet),
  fc.tuple(fc.constant(127), octet, octet, octet),
  fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
  fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), octet, octet),
  fc.tuple(fc.constant(0), octet, octet, octet),
  fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet),
);

/** IPv4 addresses on the internet (a few public /8s, none of which holds an internal range). */
const publicV4 = fc.tuple(fc.constantFrom(8, 1, 23, 45, 93, 151, 203), octet, octet, octet);

/** The ways one IPv4 address can be written inside IPv6. */
function v6Forms([a, b, c, d]: number[]): string[] {
  return [
    `::ffff:${a}.${b}.${c}.${d}`,
    `::ffff:${hex(a!, b!)}:${hex(c!, d!)}`,
    `0:0:0:0:0:ffff:${hex(a!, b!)}:${hex(c!, d!)}`,
    `64:ff9b::${hex(a!, b!)}:${hex(c!, d!)}`,
    `2002:${hex(a!, b!)}:${hex(c!, d!)}::1`,
  ];
}

describe("internalRange", () => {
  it("refuses every internal IPv4 address in every IPv6 spelling, and accepts public ones in all of them", () => {
    fc.assert(
      fc.property(internalV4, (parts) => {
        expect(internalRange(parts.join("."))).toBeDefined();
        for (const form of v6Forms(parts)) expect(internalRange(form), form).toBeDefined();
      }),
      { seed: 19019 },
    );
    fc.assert(
      fc.property(publicV4, (parts) => {
        expect(internalRange(parts.join("."))).toBeUndefined();
        for (const form of v6Forms(parts)) expect(internalRange(form), form).toBeUndefined();
      }),
      { seed: 19020 },
    );
  });

  it("names the range: loopback, link-local (metadata), unique local, and refuses what is not an address", () => {
    expect(internalRange("127.0.0.1")).toBe("loopback");
    expect(internalRange("169.254.169.254")).toBe("link-local (cloud metadata)");
    expect(internalRange("::1")).toBe("unspecified, loopback or IPv4-compatible");
    expect(internalRange("::")).toBe("unspecified, loopback or IPv4-compatible");
    expect(internalRange("fd00:ec2::254")).toBe("unique local (private, cloud metadata)");
    expect(internalRange("fe80::1%eth0")).toBe("link-local");
    expect(internalRange("ff02::1")).toBe("multicast");
    expect(internalRange("2606:4700:4700::1111")).toBeUndefined();
    expect(internalRange("metadata.google.internal")).toBe("not an IP address");
    expect(internalRange("")).toBe("not an IP address");
  });
});
