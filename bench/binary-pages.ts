import { closeSync, openSync, readFileSync, readSync, realpathSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/**
 * `node bench/binary-pages.ts <pid> [binary]`: which pages of the node binary a process keeps resident, by ELF
 * section, and how much of ICU's data (`icudt*_dat`) among them. `node bench/memory.ts` counts the binary's
 * pages as one figure; this splits it, to tell code the process runs from data it touched once (docs/scaling.md,
 * twenty-fourth pass: three `toLocaleString` calls kept 5 MiB of ICU's data resident). Linux only: it reads
 * /proc/<pid>/maps and /proc/<pid>/pagemap (the present bit, which a process's owner may read) and `readelf`.
 */

const PAGE = 4096;
const [pidText, binaryArgument] = process.argv.slice(2);
const pid = Number(pidText);
if (!Number.isInteger(pid) || pid <= 0) {
  console.error('usage: node bench/binary-pages.ts <pid> [path of the node binary it runs]');
  process.exit(2);
}
const binary = binaryArgument ?? readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!;
/** The path /proc/<pid>/maps names the binary by (symbolic links resolved). */
const mappedPath = realpathSync(binary);

/** The process's mappings of the binary: start, end and file offset of each. */
const mappings = readFileSync(`/proc/${pid}/maps`, 'utf8')
  .split('\n')
  .map((line) => line.split(/\s+/))
  .filter((fields) => fields[5] === mappedPath)
  .map(([range, , offset]) => {
    const [start, end] = range!.split('-').map((hex) => parseInt(hex, 16));
    return { start: start!, end: end!, offset: parseInt(offset!, 16) };
  });
if (mappings.length === 0) throw new Error(`process ${pid} maps no ${binary}`);
// A position-independent binary is loaded at the address of its mapping at offset 0.
const elfHeader = execFileSync('readelf', ['-hW', binary], { encoding: 'utf8' });
const loadBase = /Type:\s+DYN/.test(elfHeader) ? mappings.find((m) => m.offset === 0)!.start : 0;

const pagemap = openSync(`/proc/${pid}/pagemap`, 'r');
const entry = Buffer.alloc(8);
/** Resident bytes of the process's pages in [from, to) (addresses in the process). */
function residentBytes(from: number, to: number): number {
  let bytes = 0;
  for (let page = Math.floor(from / PAGE); page * PAGE < to; page++) {
    readSync(pagemap, entry, 0, 8, page * 8);
    if (entry.readBigUInt64LE() >> 63n) bytes += PAGE;
  }
  return bytes;
}

const MiB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const all = mappings.reduce((sum, m) => sum + residentBytes(m.start, m.end), 0);
console.log(`${binary}, process ${pid}: ${MiB(all)} MiB of the binary resident`);

// Sections of a MiB or more: `[Nr] Name Type Address Off Size …`.
for (const line of execFileSync('readelf', ['-SW', binary], { encoding: 'utf8' }).split('\n')) {
  const fields = line.replace('[ ', '[').trim().split(/\s+/);
  if (!fields[0]?.startsWith('[') || !fields[1]?.startsWith('.') || fields[2] !== 'PROGBITS') continue;
  const address = parseInt(fields[3]!, 16);
  const size = parseInt(fields[5]!, 16);
  if (size < 2 ** 20 || address === 0) continue;
  const resident = residentBytes(loadBase + address, loadBase + address + size);
  console.log(`  ${fields[1]!.padEnd(12)} ${MiB(resident).padStart(6)} of ${MiB(size)} MiB`);
}
const icu = /^\s*\d+:\s+([0-9a-f]+)\s+(\S+)\s+OBJECT.*\s(icudt\w+_dat)$/m.exec(
  execFileSync('readelf', ['-sW', binary], { encoding: 'utf8', maxBuffer: 1 << 30 }),
);
if (icu) {
  const address = parseInt(icu[1]!, 16);
  const size = Number(icu[2]);
  const resident = residentBytes(loadBase + address, loadBase + address + size);
  console.log(`  of which ICU's data (${icu[3]}): ${MiB(resident)} of ${MiB(size)} MiB`);
}
closeSync(pagemap);
