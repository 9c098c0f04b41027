/**
 * The seccomp filter, run by a classic-BPF interpreter written here from the kernel's rules: every
 * system call the threat model refuses is refused on each architecture, everything else is allowed,
 * and the bytes are what bwrap's --seccomp reads. The spawned suite (test/host/confine/) proves the
 * kernel agrees.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_UNIX,
  AF_VSOCK,
  AUDIT_ARCH,
  CLONE_NEWUSER,
  EAFNOSUPPORT,
  encodeBpf,
  ENOSYS,
  EPERM,
  RET_ALLOW,
  RET_KILL_PROCESS,
  seccompRules,
  seccompArch,
  seccompInstructions,
  seccompProgram,
  type BpfInstruction,
  type SeccompArch,
} from "../../../src/host/sandbox/seccomp.js";

/** Runs a filter on one call as the kernel would: returns the filter's verdict. */
function run(program: readonly BpfInstruction[], call: { arch: number; nr: number; args?: number[] }): number {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(call.nr >>> 0, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  (call.args ?? []).forEach((value, i) => data.writeUInt32LE(value >>> 0, 16 + 8 * i));
  let acc = 0;
  for (let pc = 0; pc < program.length;) {
    const { code, jt, jf, k } = program[pc]!;
    switch (code) {
      case 0x20: // ld [k]
        acc = data.readUInt32LE(k);
        pc++;
        break;
      case 0x15: // jeq
        pc += 1 + (acc === k >>> 0 ? jt : jf);
        break;
      case 0x35: // jge
        pc += 1 + (acc >= k >>> 0 ? jt : jf);
        break;
      case 0x45: // jset
        pc += 1 + ((acc & k) !== 0 ? jt : jf);
        break;
      case 0x06: // ret
        return k >>> 0;
      default:
        throw new Error(`unknown opcode ${code}`);
    }
  }
  throw new Error("the filter ran off its end");
}

const ERRNO = (errno: number) => (0x00050000 | errno) >>> 0;
const number = (name: string, arch: SeccompArch) => seccompRules().find((rule) => rule.name === name)!.numbers[arch];
const ARCHES: SeccompArch[] = ["x64", "arm64"];

/** The threat model, stated apart from the table: these calls must fail, whatever their arguments. */
const ALWAYS_REFUSED = [
  "setns",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "mount",
  "umount2",
  "pivot_root",
  "open_tree",
  "move_mount",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "open_by_handle_at",
  "init_module",
  "finit_module",
  "delete_module",
  "kexec_load",
  "kexec_file_load",
  "swapon",
  "swapoff",
  "reboot",
  "acct",
  "quotactl",
  "syslog",
  "lookup_dcookie",
];
/** Calls that set a mode, with the argument holding it. */
const MODE_ARG: Record<string, number> = {
  chmod: 1,
  fchmod: 1,
  fchmodat: 2,
  fchmodat2: 2,
  creat: 1,
  mkdir: 1,
  mkdirat: 2,
  mknod: 1,
  mknodat: 2,
};

describe.each(ARCHES)("the seccomp filter on %s", (arch) => {
  // Built in each test, not while the suite is collected (load-time coverage would make every mutant static).
  const program = () => seccompInstructions(arch);
  const call = (name: string, args: number[] = []) => run(program(), { arch: AUDIT_ARCH[arch], nr: number(name, arch)!, args });

  it("refuses every call the threat model names with EPERM, whatever the arguments (fast-check)", () => {
    const known = ALWAYS_REFUSED.filter((name) => number(name, arch) !== undefined);
    expect(known).toHaveLength(ALWAYS_REFUSED.length); // every one exists on both architectures
    fc.assert(
      fc.property(fc.constantFrom(...known), fc.array(fc.nat(), { maxLength: 6 }), (name, args) => {
        expect(call(name, args)).toBe(ERRNO(EPERM));
      }),
      { seed: 17, numRuns: 300 },
    );
  });

  it("refuses a setuid or setgid bit in every mode-setting call, and allows the mode without them (fast-check)", () => {
    const names = Object.keys(MODE_ARG).filter((name) => number(name, arch) !== undefined);
    expect(names).toContain("fchmodat");
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.integer({ min: 0, max: 0o7777 }), (name, mode) => {
        const args = [0, 0, 0, 0];
        args[MODE_ARG[name]!] = mode;
        expect(call(name, args)).toBe(mode & 0o6000 ? ERRNO(EPERM) : RET_ALLOW);
      }),
      { seed: 18, numRuns: 400 },
    );
  });

  it("refuses open/openat creating a setuid file, and ignores the mode when nothing is created (fast-check)", () => {
    const O_CREAT = 0o100;
    const O_TMPFILE = 0o20000000;
    fc.assert(
      fc.property(
        fc.constantFrom(...["open", "openat"].filter((name) => number(name, arch) !== undefined)),
        fc.integer({ min: 0, max: 0o37777777 }),
        fc.integer({ min: 0, max: 0o7777 }),
        (name, flags, mode) => {
          const [flagsArg, modeArg] = name === "open" ? [1, 2] : [2, 3];
          const args = [0, 0, 0, 0];
          args[flagsArg] = flags;
          args[modeArg] = mode;
          const creates = (flags & (O_CREAT | O_TMPFILE)) !== 0;
          expect(call(name, args)).toBe(creates && mode & 0o6000 ? ERRNO(EPERM) : RET_ALLOW);
        },
      ),
      { seed: 19, numRuns: 400 },
    );
    expect(call("openat", [0, 0, O_CREAT, 0o4755])).toBe(ERRNO(EPERM));
    expect(call("openat", [0, 0, 0, 0o4755])).toBe(RET_ALLOW);
  });

  it("refuses a new user namespace from clone and unshare, allows the rest; clone3 and openat2 are ENOSYS", () => {
    expect(call("clone", [CLONE_NEWUSER])).toBe(ERRNO(EPERM));
    expect(call("clone", [CLONE_NEWUSER | 0x11])).toBe(ERRNO(EPERM));
    expect(call("clone", [0x003d0f00])).toBe(RET_ALLOW); // what pthread_create passes
    expect(call("unshare", [CLONE_NEWUSER])).toBe(ERRNO(EPERM));
    expect(call("unshare", [0x00020000])).toBe(RET_ALLOW); // CLONE_NEWNS: the kernel refuses it without capabilities
    expect(call("clone3", [0])).toBe(ERRNO(ENOSYS));
    expect(call("openat2", [0])).toBe(ERRNO(ENOSYS));
  });

  it("creates sockets of AF_UNIX and AF_NETLINK's routing protocol only; with the network AF_INET and AF_INET6 too (fast-check)", () => {
    const withNetwork = () => seccompInstructions(arch, { network: true });
    const socketCall = (name: string, filter: BpfInstruction[], args: number[]) =>
      run(filter, { arch: AUDIT_ARCH[arch], nr: number(name, arch)!, args });
    fc.assert(
      fc.property(
        fc.constantFrom("socket", "socketpair"),
        fc.oneof(fc.constantFrom(AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK, 0, 17, 0x10001), fc.nat()),
        fc.nat({ max: 10 }),
        fc.nat(),
        (name, family, type, protocol) => {
          const args = [family, type, protocol];
          const local = family === AF_UNIX || (family === AF_NETLINK && protocol === 0);
          expect(socketCall(name, program(), args)).toBe(local ? RET_ALLOW : ERRNO(EAFNOSUPPORT));
          const ip = family === AF_INET || family === AF_INET6;
          expect(socketCall(name, withNetwork(), args)).toBe(local || ip ? RET_ALLOW : ERRNO(EAFNOSUPPORT));
        },
      ),
      { seed: 28, numRuns: 400 },
    );
    expect(call("socket", [AF_VSOCK, 1, 0])).toBe(ERRNO(EAFNOSUPPORT));
    expect(call("socket", [AF_NETLINK, 3, 0])).toBe(RET_ALLOW);
    expect(call("socket", [AF_NETLINK, 3, 15])).toBe(ERRNO(EAFNOSUPPORT)); // NETLINK_KOBJECT_UEVENT
    expect(call("socketpair", [AF_UNIX, 1, 0])).toBe(RET_ALLOW);
    expect(socketCall("socket", withNetwork(), [AF_VSOCK, 1, 0])).toBe(ERRNO(EAFNOSUPPORT));
  });

  // Under Landlock (up to ABI 7) connecting to a pathname unix socket is not mediated: socket(AF_UNIX) is refused,
  // socketpair(AF_UNIX) (Node's own pipes) kept; the other families as with bubblewrap.
  it("without unix sockets: socket(AF_UNIX) is refused, socketpair(AF_UNIX) allowed, the rest as before (fast-check)", () => {
    const socketCall = (name: string, options: { network: boolean; unixSockets?: boolean }, args: number[]) =>
      run(seccompInstructions(arch, options), { arch: AUDIT_ARCH[arch], nr: number(name, arch)!, args });
    fc.assert(
      fc.property(
        fc.constantFrom("socket", "socketpair"),
        fc.oneof(fc.constantFrom(AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK, 0), fc.nat()),
        fc.boolean(),
        fc.nat({ max: 3 }),
        (name, family, network, protocol) => {
          const args = [family, 1, protocol];
          const withUnix = socketCall(name, { network }, args);
          const without = socketCall(name, { network, unixSockets: false }, args);
          if (family === AF_UNIX) expect(without).toBe(name === "socket" ? ERRNO(EAFNOSUPPORT) : RET_ALLOW);
          else expect(without).toBe(withUnix);
          expect(socketCall(name, { network, unixSockets: true }, args)).toBe(withUnix);
        },
      ),
      { seed: 42, numRuns: 300 },
    );
  });

  it("allows every call it has no rule for (fast-check over the numbers)", () => {
    const ruled = new Set(
      seccompRules()
        .map((rule) => rule.numbers[arch])
        .filter((n) => n !== undefined),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 600 }), fc.array(fc.nat(), { maxLength: 6 }), (nr, args) => {
        fc.pre(!ruled.has(nr));
        expect(run(program(), { arch: AUDIT_ARCH[arch], nr, args })).toBe(RET_ALLOW);
      }),
      { seed: 20, numRuns: 300 },
    );
    expect(run(program(), { arch: AUDIT_ARCH[arch], nr: 0 })).toBe(RET_ALLOW); // read / io_setup
  });

  it("kills a call made under another architecture's numbering (a 32-bit call into a 64-bit kernel)", () => {
    for (const other of [0x40000003, AUDIT_ARCH[arch === "x64" ? "arm64" : "x64"], 0]) {
      expect(run(program(), { arch: other, nr: 0 })).toBe(RET_KILL_PROCESS);
    }
  });

  it("encodes each instruction as struct sock_filter: code u16, jt u8, jf u8, k u32, little-endian", () => {
    const bytes = encodeBpf(program());
    const instructions = program();
    expect(bytes.length).toBe(instructions.length * 8);
    instructions.forEach((instruction, i) => {
      expect(bytes.readUInt16LE(i * 8)).toBe(instruction.code);
      expect(bytes[i * 8 + 2]).toBe(instruction.jt);
      expect(bytes[i * 8 + 3]).toBe(instruction.jf);
      expect(bytes.readUInt32LE(i * 8 + 4)).toBe(instruction.k >>> 0);
    });
    expect(seccompProgram({ network: false }, arch)).toEqual(bytes);
  });
});

describe("the seccomp filter on x64 only", () => {
  it("has a rule for exactly the calls of the threat model, each numbered on x64", () => {
    const expected = [
      ...ALWAYS_REFUSED,
      ...Object.keys(MODE_ARG),
      ...["open", "openat", "openat2", "clone", "clone3", "unshare", "socket", "socketpair"],
    ];
    expect(
      seccompRules()
        .map((rule) => rule.name)
        .sort(),
    ).toEqual(expected.sort());
    for (const rule of seccompRules()) expect(rule.numbers.x64, rule.name).toBeTypeOf("number");
  });

  it("refuses x32 numbers (bit 30), which would otherwise bypass every rule", () => {
    const program = seccompInstructions("x64");
    expect(run(program, { arch: AUDIT_ARCH.x64, nr: 0x40000000 + 90, args: [0, 0o4755] })).toBe(ERRNO(EPERM));
    expect(run(program, { arch: AUDIT_ARCH.x64, nr: 0x40000000 })).toBe(ERRNO(EPERM));
    expect(run(program, { arch: AUDIT_ARCH.x64, nr: 0x3fffffff })).toBe(RET_ALLOW);
  });

  it("knows x64 and arm64 and nothing else", () => {
    expect(seccompArch("x64")).toBe("x64");
    expect(seccompArch("arm64")).toBe("arm64");
    expect(seccompArch("ia32")).toBeUndefined();
    expect(seccompProgram({ network: false }, "riscv64")).toBeUndefined();
  });

  it("numbers the calls as the kernel's headers do (spot checks)", () => {
    expect(number("chmod", "x64")).toBe(90);
    expect(number("fchmodat", "arm64")).toBe(53);
    expect(number("chmod", "arm64")).toBeUndefined();
    expect(number("clone", "arm64")).toBe(220);
    expect(number("unshare", "x64")).toBe(272);
    expect(number("ptrace", "arm64")).toBe(117);
    expect(number("socket", "x64")).toBe(41);
    expect(number("socketpair", "x64")).toBe(53);
    expect(number("socket", "arm64")).toBe(198);
    expect(number("socketpair", "arm64")).toBe(199);
  });
});
