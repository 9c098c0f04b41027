/**
 * Which IP addresses a host-side request must not reach unless told to: loopback, private, link-local
 * (where cloud metadata services live), and the other ranges that lead into the machine or its network
 * rather than to the internet. IPv4 addresses written inside IPv6 (mapped, NAT64, 6to4) are judged by
 * the IPv4 address they carry.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";

const RANGES: readonly (readonly [string, number, "ipv4" | "ipv6", string])[] = [
  ["0.0.0.0", 8, "ipv4", "this-network"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "shared (carrier-grade NAT)"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  ["169.254.0.0", 16, "ipv4", "link-local (cloud metadata)"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "IETF protocol assignments"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "benchmarking"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 96, "ipv6", "unspecified, loopback or IPv4-compatible"],
  ["fc00::", 7, "ipv6", "unique local (private, cloud metadata)"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["fec0::", 10, "ipv6", "site-local"],
  ["ff00::", 8, "ipv6", "multicast"],
];

const lists = RANGES.map(([network, prefix, type, name]) => {
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

/** The IPv4 address an IPv6 address carries: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedIPv4(address: string): string | undefined {
  if (!isIPv6(address)) return undefined;
  const groups = expandIPv6(address);
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!);
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
