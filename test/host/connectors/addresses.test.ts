/**
 * Which addresses fetch refuses (issue 19): loopback, private, link-local (metadata) and the other
 * internal ranges, in IPv4, IPv6, and IPv4 written inside IPv6 (mapped, NAT64, 6to4).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { internalRange, SPECIAL_PURPOSE, type SpecialRange } from "../../../src/host/connectors/addresses.js";

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
    `::ffff:0:${a}.${b}.${c}.${d}`,
    `0:0:0:0:ffff:0:${hex(a!, b!)}:${hex(c!, d!)}`,
    `64:ff9b::${hex(a!, b!)}:${hex(c!, d!)}`,
    `64:ff9b::${a}.${b}.${c}.${d}`,
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

  it("names the newer ranges: local-use NAT64, IPv4-translated by what they carry, Teredo, documentation, discard", () => {
    // Issue 28 item 12: these two were public. The first embeds the metadata address in a local-use prefix.
    expect(internalRange("64:ff9b:1::a9fe:a9fe")).toBe("local-use NAT64");
    expect(internalRange("64:ff9b:1:ffff::808:808")).toBe("local-use NAT64");
    expect(internalRange("::ffff:0:a9fe:a9fe")).toBe("link-local (cloud metadata)");
    expect(internalRange("::ffff:0:169.254.169.254")).toBe("link-local (cloud metadata)");
    expect(internalRange("::ffff:0:808:808")).toBeUndefined();
    expect(internalRange("2001:0:4136:e378:8000:63bf:3fff:fdd2")).toBe("IETF protocol assignments (Teredo, ORCHID, ...)");
    expect(internalRange("2001:db8::1")).toBe("documentation");
    expect(internalRange("3fff::1")).toBe("documentation");
    expect(internalRange("100::1")).toBe("discard-only");
    expect(internalRange("203.0.113.7")).toBe("documentation (TEST-NET-3)");
    expect(internalRange("255.255.255.255")).toBe("reserved");
    expect(internalRange("2002:cb00:7107::1")).toBe("documentation (TEST-NET-3)");
  });
});

/** A random address inside `range` (its network bits kept, the others drawn), as fast-check draws it. */
function insideRange([network, prefix, type]: SpecialRange): fc.Arbitrary<string> {
  const bits = type === "ipv4" ? 32 : 128;
  const base = type === "ipv4" ? BigInt(network.split(".").reduce((n, part) => n * 256 + Number(part), 0)) : v6Value(network);
  const hostBits = BigInt(bits - prefix);
  return fc.bigInt({ min: 0n, max: (1n << hostBits) - 1n }).map((host) => {
    const value = ((base >> hostBits) << hostBits) | host;
    if (type === "ipv4") return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
    return Array.from({ length: 8 }, (_, at) => ((value >> BigInt(112 - 16 * at)) & 0xffffn).toString(16)).join(":");
  });
}

function v6Value(network: string): bigint {
  const [head, tail = ""] = network.split("::");
  const left = head === "" ? [] : head!.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array.from({ length: 8 - left.length - right.length }, () => "0"), ...right];
  return groups.reduce((n, group) => (n << 16n) | BigInt(parseInt(group, 16)), 0n);
}

describe("every special-purpose range (IANA IPv4 and IPv6 registries)", () => {
  it("refuses any address in any range of the table, naming it; and an IPv4 one in every IPv6 spelling", () => {
    for (const range of SPECIAL_PURPOSE) {
      fc.assert(
        fc.property(insideRange(range), (address) => {
          expect(internalRange(address), address).toBeDefined();
          if (range[2] === "ipv4")
            for (const form of v6Forms(address.split(".").map(Number))) expect(internalRange(form), form).toBeDefined();
        }),
        { seed: 28012, numRuns: 40 },
      );
    }
  });

  it("lists each range once, with its RFC, and a valid network", () => {
    for (const [network, prefix, type, name, rfc] of SPECIAL_PURPOSE) {
      expect(rfc).toMatch(/^RFC \d+$/);
      expect(name).not.toBe("");
      expect(prefix).toBeLessThanOrEqual(type === "ipv4" ? 32 : 128);
      expect(internalRange(network), network).toBe(name);
    }
    expect(new Set(SPECIAL_PURPOSE.map(([network, prefix]) => `${network}/${prefix}`)).size).toBe(SPECIAL_PURPOSE.length);
  });
});
