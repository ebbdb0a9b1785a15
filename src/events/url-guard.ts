import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { ApiError } from '../platform/errors.ts';

/**
 * The SSRF guard of outbound webhooks. A user names the URL, and the gateway's network is not theirs to
 * reach: by default an endpoint must be `https://` and may not resolve to a loopback, private, link-local,
 * shared, multicast or reserved address. The check runs twice: when the URL is registered (a clear error),
 * and inside each connection's DNS lookup (so a name that later resolves elsewhere — DNS rebinding — is
 * refused at connect time, on the very address the socket would use).
 */

/** What the operator allows (`WEBHOOK_ALLOW_HTTP`, `WEBHOOK_ALLOW_PRIVATE_ADDRESSES`); tests allow both. */
export interface UrlPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  // ::/96 holds ::, ::1 and the IPv4-compatible ::a.b.c.d (deprecated, but routed to IPv4 by some stacks).
  ['::', 96],
  // IPv4-translated ::ffff:0:a.b.c.d (SIIT), another form that reaches the IPv4 address it carries.
  ['::ffff:0:0:0', 96],
  // Site-local (deprecated by RFC 3879, still routed inside some networks).
  ['fec0::', 10],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
  ['100::', 64],
  // Transition prefixes that embed an IPv4 address (6to4, Teredo): refused whole rather than decoded.
  ['2002::', 16],
  ['2001::', 32],
] as const)
  blocked.addSubnet(network, prefix, 'ipv6');

/** True when `address` (an IP literal) is one a webhook may not reach without the operator's leave. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  // An IPv4-mapped IPv6 address (::ffff:127.0.0.1) reaches the IPv4 address it carries.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocked.check(mapped[1], 'ipv4');
  return blocked.check(address, 'ipv6');
}

function refused(message: string): ApiError {
  return new ApiError('WEBHOOK_URL_REFUSED', message, { details: { param: 'url' } });
}

/** Longest URL an endpoint may have. */
export const MAX_URL_LENGTH = 2048;

/**
 * Checks a URL as it is registered: parses, https (unless allowed), no credentials in it, and every address
 * its host resolves to public (unless allowed). Returns the normalised URL; throws WEBHOOK_URL_REFUSED (400).
 */
export async function checkEndpointUrl(text: string, policy: UrlPolicy): Promise<string> {
  const url = URL.parse(text);
  if (!url || text.length > MAX_URL_LENGTH) throw refused('The webhook URL is not a valid absolute URL.');
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) {
    throw refused('The webhook URL must use https:// (the operator can allow http:// with WEBHOOK_ALLOW_HTTP).');
  }
  if (url.username || url.password) throw refused('The webhook URL may not carry a user name or password.');
  url.hash = '';
  if (policy.allowPrivate) return url.toString();
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookupAll(host)).map((entry) => entry.address);
  } catch {
    throw refused(`The webhook URL's host ${host} does not resolve.`);
  }
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw refused(
      `The webhook URL's host ${host} resolves to a loopback, private or link-local address, which webhooks may not reach ` +
        '(the operator can allow it with WEBHOOK_ALLOW_PRIVATE_ADDRESSES).',
    );
  }
  return url.toString();
}

function lookupAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );
}

/** The error a guarded lookup fails with; the sender records it as the attempt's reason. */
export class PrivateAddressError extends Error {
  override name = 'PrivateAddressError';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `http.request` that refuses private addresses at connect time. Security invariant: the
 * address checked is the address connected to (no second resolution between the check and the socket).
 */
export function guardedLookup(policy: UrlPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const allowed = policy.allowPrivate ? addresses : addresses.filter((entry) => !isPrivateAddress(entry.address));
      if (allowed.length === 0)
        return callback(new PrivateAddressError(`${hostname} resolves only to private addresses`), []);
      if (options.all) return callback(null, allowed);
      callback(null, allowed[0].address, allowed[0].family);
    });
  };
}
