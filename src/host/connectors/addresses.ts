/**
 * Which IP addresses a host-side request must not reach unless told to: loopback, private, link-local
 * (where cloud metadata services live), and the other ranges that lead into the machine or its network
 * rather than to the internet. IPv4 addresses written inside IPv6 (mapped, NAT64, 6to4) are judged by
 * the IPv4 address they carry (every range of the IANA special-purpose registries: {@link SPECIAL_PURPOSE}).
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** One special-purpose range: network, prefix length, family, the name a refusal gives, and where it is defined. */
export type SpecialRange = readonly [network: string, prefix: number, type: "ipv4" | "ipv6", name: string, rfc: string];

/**
 * Every range of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of RFC 9780, 2025), plus
 * multicast and the deprecated site-local range, all refused: none leads to a web origin on the internet,
 * the ones IANA marks globally reachable (AS112, PCP/TURN anycast, AMT) included. The ranges that carry an
 * IPv4 address (IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) are not listed: an address in them is judged by the IPv4 address it carries. Teredo
 * (2001::/32) is refused whole, with the rest of 2001::/23: its server and client addresses are both
 * IPv4 and the client's is obfuscated, so it is not worth judging. Tested by addresses.test.ts ("every
 * special-purpose range").
 */
export const SPECIAL_PURPOSE: readonly SpecialRange[] = [
  ["0.0.0.0", 8, "ipv4", "this-network", "RFC 791"],
  ["10.0.0.0", 8, "ipv4", "private", "RFC 1918"],
  ["100.64.0.0", 10, "ipv4", "shared (carrier-grade NAT)", "RFC 6598"],
  ["127.0.0.0", 8, "ipv4", "loopback", "RFC 1122"],
  ["169.254.0.0", 16, "ipv4", "link-local (cloud metadata)", "RFC 3927"],
  ["172.16.0.0", 12, "ipv4", "private", "RFC 1918"],
  // Holds DS-Lite 192.0.0.0/29, 192.0.0.8, the PCP and TURN anycasts 192.0.0.9-10, NAT64 discovery 192.0.0.170-171.
  ["192.0.0.0", 24, "ipv4", "IETF protocol assignments", "RFC 6890"],
  ["192.0.2.0", 24, "ipv4", "documentation (TEST-NET-1)", "RFC 5737"],
  ["192.31.196.0", 24, "ipv4", "AS112", "RFC 7535"],
  ["192.52.193.0", 24, "ipv4", "AMT", "RFC 7450"],
  ["192.88.99.0", 24, "ipv4", "6to4 relay anycast (deprecated)", "RFC 7526"],
  ["192.168.0.0", 16, "ipv4", "private", "RFC 1918"],
  ["192.175.48.0", 24, "ipv4", "AS112 direct delegation", "RFC 7534"],
  ["198.18.0.0", 15, "ipv4", "benchmarking", "RFC 2544"],
  ["198.51.100.0", 24, "ipv4", "documentation (TEST-NET-2)", "RFC 5737"],
  ["203.0.113.0", 24, "ipv4", "documentation (TEST-NET-3)", "RFC 5737"],
  ["224.0.0.0", 4, "ipv4", "multicast", "RFC 5771"],
  // Holds the limited broadcast 255.255.255.255 (RFC 8190).
  ["240.0.0.0", 4, "ipv4", "reserved", "RFC 1112"],
  // Holds the unspecified ::/128, loopback ::1/128 (RFC 4291) and the deprecated IPv4-compatible addresses.
  ["::", 96, "ipv6", "unspecified, loopback or IPv4-compatible", "RFC 4291"],
  // Local-use NAT64: what it translates to is the network's own choice, so it is refused, not judged.
  ["64:ff9b:1::", 48, "ipv6", "local-use NAT64", "RFC 8215"],
  ["100::", 64, "ipv6", "discard-only", "RFC 6666"],
  ["100:0:0:1::", 64, "ipv6", "dummy prefix", "RFC 9780"],
  // Holds Teredo 2001::/32, benchmarking 2001:2::/48, AMT 2001:3::/32, AS112 2001:4:112::/48, ORCHID(v2), DRIP.
  ["2001::", 23, "ipv6", "IETF protocol assignments (Teredo, ORCHID, ...)", "RFC 2928"],
  ["2001:db8::", 32, "ipv6", "documentation", "RFC 3849"],
  ["2620:4f:8000::", 48, "ipv6", "AS112 direct delegation", "RFC 7534"],
  ["3fff::", 20, "ipv6", "documentation", "RFC 9637"],
  ["5f00::", 16, "ipv6", "segment routing (SRv6 SIDs)", "RFC 9602"],
  ["fc00::", 7, "ipv6", "unique local (private, cloud metadata)", "RFC 4193"],
  ["fe80::", 10, "ipv6", "link-local", "RFC 4291"],
  ["fec0::", 10, "ipv6", "site-local (deprecated)", "RFC 3879"],
  ["ff00::", 8, "ipv6", "multicast", "RFC 4291"],
];

const lists = SPECIAL_PURPOSE.map(([network, prefix, type, name]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return { list, type, name };
});

/**
 * The name of the internal range `address` is in ("loopback", "private", ...), or `undefined` for an
 * address on the internet. Anything that is not an IP address counts as internal ("not an IP
 * address"): a check that cannot read its input refuses.
 */
export function internalRange(address: string): string | undefined {
  const embedded = embeddedIPv4(address);
  if (embedded !== undefined) return internalRange(embedded);
  const type = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined;
  if (type === undefined) return "not an IP address";
  return lists.find((entry) => entry.type === type && entry.list.check(address, type))?.name;
}

/**
 * The IPv4 address an IPv6 address carries: IPv4-mapped (::ffff:0:0/96, RFC 4291), IPv4-translated
 * (::ffff:0:0:0/96, RFC 2765), NAT64 (64:ff9b::/96, RFC 6052), 6to4 (2002::/16, RFC 3056).
 */
function embeddedIPv4(address: string): string | undefined {
  if (!isIPv6(address)) return undefined;
  const groups = expandIPv6(address);
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!);
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return undefined;
}

/** The eight 16-bit groups of a valid IPv6 address (a zone index dropped, a dotted IPv4 tail converted). */
function expandIPv6(address: string): number[] {
  let text = address.split("%")[0]!.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head === "" ? [] : head!.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const middle = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0");
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16));
}
