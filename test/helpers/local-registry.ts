/**
 * An npm registry on loopback made of what is installed: every package under the given `node_modules`
 * (found by walking their package.json files, nested ones too) is served as a packument and a tarball
 * packed from its installed directory (entries under `package/`, its own `node_modules` left out), with
 * the integrity computed here. So `npx`/`npm install` with `npm_config_registry` set to it install
 * offline what the repository already has. Extra packages (an `npm pack` tarball) are served as given.
 * Requests for anything else are answered 404 and kept in `missed`, so a test can say what was missing.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { lstatSync, readdirSync, readFileSync, statSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, relative, sep } from "node:path";
import { gzipSync } from "node:zlib";

interface Version {
  manifest: Record<string, unknown>;
  /** The installed directory to pack, or the tarball to serve as it is. */
  source: { dir: string } | { tarball: string };
}

export interface LocalRegistry {
  /** `http://127.0.0.1:<port>/`, for `npm_config_registry`. */
  readonly url: string;
  /** The paths asked for that it does not have (packuments and tarballs). */
  readonly missed: string[];
  /** The names and tarballs (`name@version`) it served, in order. */
  readonly served: string[];
  close(): Promise<void>;
}

/** The manifest fields npm reads from a packument's version when it resolves and installs. */
const MANIFEST_FIELDS = ["name", "version", "dependencies", "bin", "engines", "os", "cpu", "libc", "directories"] as const;

/** Every package installed under `nodeModules` (scopes and nested node_modules included), by name and version. */
function installed(nodeModules: string, into: Map<string, Map<string, Version>>): void {
  if (!existsSync(nodeModules)) return;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith(".")) continue;
    const dirs = entry.startsWith("@")
      ? readdirSync(join(nodeModules, entry)).map((name) => join(nodeModules, entry, name))
      : [join(nodeModules, entry)];
    for (const dir of dirs) {
      const file = join(dir, "package.json");
      if (!lstatSync(dir).isDirectory() || !existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      if (typeof pkg.name === "string" && typeof pkg.version === "string") {
        const versions = into.get(pkg.name) ?? new Map<string, Version>();
        if (!versions.has(pkg.version)) versions.set(pkg.version, { manifest: pkg, source: { dir } });
        into.set(pkg.name, versions);
      }
      installed(join(dir, "node_modules"), into);
    }
  }
}

/** A package's manifest as served: optional and peer dependencies that are not installed left out (npm would look them up). */
function served(pkg: Record<string, unknown>, have: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const manifest: Record<string, unknown> = {};
  for (const field of MANIFEST_FIELDS) if (pkg[field] !== undefined) manifest[field] = pkg[field];
  const present = (deps: unknown) =>
    deps === undefined ? undefined : Object.fromEntries(Object.entries(deps as Record<string, string>).filter(([name]) => have.has(name)));
  const optional = present(pkg.optionalDependencies);
  const peers = present(pkg.peerDependencies);
  if (optional !== undefined) manifest.optionalDependencies = optional;
  if (peers !== undefined) {
    manifest.peerDependencies = peers;
    const meta = pkg.peerDependenciesMeta as Record<string, unknown> | undefined;
    if (meta !== undefined) manifest.peerDependenciesMeta = Object.fromEntries(Object.entries(meta).filter(([name]) => name in peers));
  }
  // npm takes a dependency that is also optional as optional; one left out above must not stay a plain one.
  if (manifest.dependencies !== undefined && pkg.optionalDependencies !== undefined) {
    manifest.dependencies = Object.fromEntries(
      Object.entries(manifest.dependencies as Record<string, string>).filter(
        ([name]) => !(name in (pkg.optionalDependencies as object)) || have.has(name),
      ),
    );
  }
  return manifest;
}

/** One ustar header block. */
function tarHeader(path: string, size: number, mode: number, type: "0" | "5"): Buffer {
  const header = Buffer.alloc(512);
  let name = path;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = path.lastIndexOf("/", 155);
    prefix = path.slice(0, cut);
    name = path.slice(cut + 1);
    if (cut <= 0 || Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155)
      throw new Error(`local registry: path too long to pack: ${path}`);
  }
  header.write(name, 0, 100);
  header.write(`${(mode & 0o7777).toString(8).padStart(7, "0")}\0`, 100);
  header.write("0000000\0", 108);
  header.write("0000000\0", 116);
  header.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
  header.write(`${(0).toString(8).padStart(11, "0")}\0`, 136);
  header.write("        ", 148);
  header.write(type, 156);
  header.write("ustar\0", 257);
  header.write("00", 263);
  header.write(prefix, 345, 155);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return header;
}

/** The installed directory `dir` as an npm tarball: gzip of a tar whose entries are under `package/`, without `node_modules`. */
export function packDirectory(dir: string): Buffer {
  const blocks: Buffer[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current).sort()) {
      const path = join(current, entry);
      if (current === dir && entry === "node_modules") continue;
      const stat = statSync(path);
      const name = `package/${relative(dir, path).split(sep).join("/")}`;
      if (stat.isDirectory()) {
        blocks.push(tarHeader(`${name}/`, 0, stat.mode, "5"));
        walk(path);
      } else if (stat.isFile()) {
        const data = readFileSync(path);
        blocks.push(tarHeader(name, data.length, stat.mode, "0"), data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
    }
  };
  walk(dir);
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks), { level: 1 });
}

/**
 * Starts the registry on 127.0.0.1 (an ephemeral port) over the packages installed under `nodeModules`,
 * and `extra` tarballs (each with its package.json), which win over an installed package of the same name.
 */
export async function startLocalRegistry(
  nodeModules: readonly string[],
  extra: readonly { manifest: Record<string, unknown>; tarball: string }[] = [],
): Promise<LocalRegistry> {
  const packages = new Map<string, Map<string, Version>>();
  for (const dir of nodeModules) installed(dir, packages);
  for (const { manifest, tarball } of extra) {
    packages.set(manifest.name as string, new Map([[manifest.version as string, { manifest, source: { tarball } }]]));
  }
  const tarballs = new Map<string, Buffer>();
  const tarballOf = (name: string, version: string): Buffer => {
    const key = `${name}@${version}`;
    let data = tarballs.get(key);
    if (data === undefined) {
      const { source } = packages.get(name)!.get(version)!;
      data = "dir" in source ? packDirectory(source.dir) : readFileSync(source.tarball);
      tarballs.set(key, data);
    }
    return data;
  };
  const missed: string[] = [];
  const servedPaths: string[] = [];
  let base = "";
  const server: Server = createServer((request, response) => {
    const path = decodeURIComponent((request.url ?? "/").split("?")[0]!).slice(1);
    const tarball = /^-\/tarballs\/(.+)\/([^/]+)\.tgz$/.exec(path);
    const versions = packages.get(tarball?.[1] ?? path);
    if (request.method !== "GET" || versions === undefined || (tarball !== null && !versions.has(tarball[2]!))) {
      missed.push(path);
      response.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    servedPaths.push(tarball === null ? path : `${tarball[1]}@${tarball[2]}`);
    if (tarball !== null) {
      response.writeHead(200, { "content-type": "application/octet-stream" }).end(tarballOf(tarball[1]!, tarball[2]!));
      return;
    }
    const list = [...versions.keys()];
    const packument = {
      name: path,
      "dist-tags": { latest: list.sort(compareVersions).at(-1) },
      versions: Object.fromEntries(
        list.map((version) => {
          const data = tarballOf(path, version);
          const dist = {
            tarball: `${base}-/tarballs/${encodeURIComponent(path)}/${version}.tgz`,
            integrity: `sha512-${createHash("sha512").update(data).digest("base64")}`,
            shasum: createHash("sha1").update(data).digest("hex"),
          };
          return [version, { ...served(versions.get(version)!.manifest, packages), dist }];
        }),
      ),
    };
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url: base,
    missed,
    served: servedPaths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Orders release versions (x.y.z, a prerelease before its release); enough for picking `latest` among installed ones. */
function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core, pre] = v.split("-", 2) as [string, string | undefined];
    return { parts: core.split(".").map(Number), pre };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) if (x.parts[i] !== y.parts[i]) return (x.parts[i] ?? 0) - (y.parts[i] ?? 0);
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}
