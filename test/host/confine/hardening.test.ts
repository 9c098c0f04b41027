/**
 * Attacks from issue 28 on the landed sandbox, each run for real under bubblewrap: what a body or guest
 * got through before, and that it is refused now. docs/host.md "Threat model" names each test.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCode, runGuest } from "../../../src/host/index.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

const hasBwrap = bwrapPath !== undefined;
const hasPerl = (() => {
  try {
    execFileSync("/usr/bin/perl", ["-e", "1"]);
    return true;
  } catch {
    return false;
  }
})();

/**
 * A body that creates (never connects) one socket of each family, and one socket pair, with perl's built-in
 * socket() (no module: the numbers are linux/socket.h's), and answers "ok" or the errno for each.
 */
const SOCKETS = `const cp = process.getBuiltinModule("node:child_process");
  const perl = 'for my $t (["unix",1,1],["inet",2,1],["inet6",10,2],["netlink",16,3],["packet",17,2],["vsock",40,1]) {' +
    ' my ($n,$f,$y) = @$t; if (socket(my $s, $f, $y, 0)) { print "$n=ok\\n"; close $s } else { print "$n=" . ($!+0) . "\\n" } }' +
    ' if (socket(my $u, 16, 3, 15)) { print "uevent=ok\\n" } else { print "uevent=" . ($!+0) . "\\n" }' +
    ' if (socketpair(my $a, my $b, 1, 1, 0)) { print "unixpair=ok\\n" } else { print "unixpair=" . ($!+0) . "\\n" }' +
    ' if (socketpair(my $c, my $d, 40, 1, 0)) { print "vsockpair=ok\\n" } else { print "vsockpair=" . ($!+0) . "\\n" }';
  const out = cp.execFileSync("/usr/bin/perl", ["-e", perl], { encoding: "utf8" });
  const interfaces = Object.keys(process.getBuiltinModule("node:os").networkInterfaces()).join(",");
  return { ...Object.fromEntries(out.trim().split("\\n").map((line) => line.split("="))), interfaces };`;
const EAFNOSUPPORT = "97";

describe.runIf(process.platform === "linux" && hasBwrap)("issue 28's attacks on the sandbox", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-hardening-")));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  describe.runIf(hasPerl)("socket families (28.3)", () => {
    // Was a hole (fixed): the network namespace does not cover AF_VSOCK, and no filter refused it: a body on a VM
    // could create vsock sockets in the host's port space. Creation refused is the test; nothing connects anywhere.
    it("without the network, only AF_UNIX and netlink's routing sockets: AF_VSOCK, AF_INET(6), AF_PACKET, uevents refused", async () => {
      const report = await runCode({ code: SOCKETS, sandbox: true });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual({
        unix: "ok",
        unixpair: "ok",
        inet: EAFNOSUPPORT,
        inet6: EAFNOSUPPORT,
        netlink: "ok",
        interfaces: "lo",
        uevent: EAFNOSUPPORT,
        packet: EAFNOSUPPORT,
        vsock: EAFNOSUPPORT,
        vsockpair: EAFNOSUPPORT,
      });
    });

    it("with the network, the IP families and netlink as well, and still no AF_VSOCK nor AF_PACKET", async () => {
      const report = await runCode({ code: SOCKETS, sandbox: { network: true } });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual({
        unix: "ok",
        unixpair: "ok",
        inet: "ok",
        inet6: (report.outcome?.structured as Record<string, string>).inet6 === "ok" ? "ok" : EAFNOSUPPORT, // a host without IPv6
        netlink: "ok",
        interfaces: expect.any(String),
        uevent: EAFNOSUPPORT,
        packet: EAFNOSUPPORT,
        vsock: EAFNOSUPPORT,
        vsockpair: EAFNOSUPPORT,
      });
    });
  });

  // Was a hole (28.13): /proc/pressure was the sandbox's own /proc's, writable: a root host's guest could set PSI
  // triggers, kernel work host-wide.
  it.runIf(existsSync("/proc/pressure/cpu"))("opens none of /proc/pressure/{cpu,io,memory} for writing; they still read", async () => {
    const report = await runCode({
      sandbox: true,
      code: `const fs = process.getBuiltinModule("node:fs");
        return ["cpu", "io", "memory"].map((name) => {
          const path = "/proc/pressure/" + name;
          let write; try { fs.closeSync(fs.openSync(path, "r+")); write = "opened"; } catch (e) { write = e.code; }
          let read; try { read = fs.readFileSync(path, "utf8").startsWith("some ") ? "read" : "odd"; } catch (e) { read = e.code; }
          return name + ": " + write + ", " + read;
        });`,
    });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual(["cpu: EROFS, read", "io: EROFS, read", "memory: EROFS, read"]);
  });

  // Was a hole (28.7): the mask walk stopped three levels down and never entered node_modules: a host daemon's socket at
  // a/b/c/d/app.sock or node_modules/.cache/daemon.sock was shown, and a network-less body connected to it.
  it("a body cannot connect to a host server's socket four levels down, nor to one inside node_modules", async () => {
    const proj = mkdtempSync(join(base, "deep-sock-"));
    const paths = [join(proj, "a", "b", "c", "d", "app.sock"), join(proj, "node_modules", ".cache", "daemon.sock")];
    const servers = paths.map((path) => {
      mkdirSync(dirname(path), { recursive: true });
      return createServer((socket) => socket.end("HOST-DAEMON\n")).listen(path);
    });
    try {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.once("listening", resolve))));
      const report = await runCode({
        cwd: proj,
        sandbox: true,
        code: `const net = process.getBuiltinModule("node:net");
          const reach = (path) => new Promise((resolve) => { const s = net.connect(path); let d = "";
            s.on("data", (b) => (d += b)); s.on("end", () => resolve("connected: " + d.trim())); s.on("error", (e) => resolve(e.code)); });
          return Promise.all(${JSON.stringify(paths)}.map(reach));`,
      });
      expect(report.failure).toBeUndefined();
      expect(report.sandbox?.masked).toEqual(expect.arrayContaining(paths));
      expect(report.outcome?.structured).toEqual(["ECONNREFUSED", "ECONNREFUSED"]);
    } finally {
      for (const server of servers) server.close();
    }
  });

  // Was a hole (28.9): a run that may write the project replaced src/ with a link to another directory, and the next
  // `node src/guest.mjs` showed and ran the script it points at (the script's directory was resolved as if named).
  it("a script directory a writable run replaced with a link out of the project is refused, and nothing runs", async () => {
    const proj = mkdtempSync(join(base, "planted-"));
    const victim = mkdtempSync(join(base, "victim-"));
    mkdirSync(join(proj, "src"));
    writeFileSync(join(proj, "src", "guest.mjs"), "process.exit(0);");
    mkdirSync(join(victim, "src"));
    writeFileSync(join(victim, "src", "guest.mjs"), "process.exit(42);"); // the victim's script
    const plant = await runCode({
      sandbox: { writable: [proj] },
      code: `const fs = process.getBuiltinModule("node:fs");
        fs.rmSync(${JSON.stringify(join(proj, "src"))}, { recursive: true });
        fs.symlinkSync(${JSON.stringify(join(victim, "src"))}, ${JSON.stringify(join(proj, "src"))});
        return "planted";`,
    });
    expect(plant.outcome?.structured).toBe("planted");
    const report = await runGuest({ command: process.execPath, args: ["src/guest.mjs"], cwd: proj, sandbox: true });
    expect(report.exit?.code).not.toBe(42);
    expect(report.failure?.code).toBe("SandboxUnavailable");
    expect(report.failure?.message).toContain("leads out of it through a link");
  });
});
