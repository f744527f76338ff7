import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

/** The 64:ff9b:1::/48 local-use NAT64 prefix and 100:0:0:1::/64 (RFC 9780), which ipaddr.js calls unicast. */
const EXTRA_V6: readonly [ipaddr.IPv6, number][] = [
  [ipaddr.IPv6.parse('100:0:0:1::'), 64],
  [ipaddr.IPv6.parse('64:ff9b:1::'), 48],
];
/** Global unicast: everything outside 2000::/3 is unassigned or special. */
const GLOBAL_UNICAST_V6: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

function v4Blocked(ip: ipaddr.IPv4): boolean {
  // `range()` names every IANA special-purpose block (private, loopback, link-local, CGNAT, the
  // documentation and benchmarking nets, 192.0.0.0/24, 240.0.0.0/4, multicast, broadcast, …).
  return ip.range() !== 'unicast';
}

/** The IPv4 address an IPv6 address carries: mapped (::ffff:0:0/96, ::ffff:0:0:0/96), NAT64 64:ff9b::/96, 6to4 2002::/16. */
function embeddedV4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = ip.parts;
  const range = ip.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (range === 'rfc6052' && p[2] === 0)) {
    return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 255, p[7]! >> 8, p[7]! & 255]);
  }
  if (range === '6to4') return new ipaddr.IPv4([p[1]! >> 8, p[1]! & 255, p[2]! >> 8, p[2]! & 255]);
  return undefined;
}

function v6Blocked(ip: ipaddr.IPv6): boolean {
  const v4 = embeddedV4(ip);
  if (v4) return v4Blocked(v4);
  if (ip.range() !== 'unicast') return true;
  if (EXTRA_V6.some((r) => ip.match(r))) return true;
  return !ip.match(GLOBAL_UNICAST_V6);
}

function parse(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  // Only canonical spellings (ipaddr.js would also read `1.2.3` or `0x7f.1`).
  if (isIP(bare) === 0) return undefined;
  try {
    return ipaddr.parse(bare);
  } catch {
    return undefined;
  }
}

/**
 * True for every address outside public unicast: each IANA special-purpose IPv4 and IPv6 block
 * (loopback, private, link-local, CGNAT, documentation, benchmarking, reserved, multicast, …), the
 * IPv6 forms that carry such an IPv4 address, and anything that does not parse.
 */
export function isBlockedAddress(ip: string): boolean {
  const addr = parse(ip);
  if (!addr) return true;
  return addr.kind() === 'ipv4' ? v4Blocked(addr as ipaddr.IPv4) : v6Blocked(addr as ipaddr.IPv6);
}

/** The normal form of an address (IPv4-mapped IPv6 as IPv4), to compare spellings. */
function normal(ip: string): string | undefined {
  const addr = parse(ip);
  if (!addr) return undefined;
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address().toString();
  return addr.toNormalizedString();
}

/**
 * True when `ip` is an address of one of this host's own network interfaces, public or not (a
 * request to it reaches this server or its neighbours). Read on every call: interfaces change.
 */
export function isOwnAddress(ip: string): boolean {
  const target = normal(ip);
  if (!target) return false;
  for (const list of Object.values(networkInterfaces())) {
    for (const iface of list ?? []) if (normal(iface.address) === target) return true;
  }
  return false;
}
