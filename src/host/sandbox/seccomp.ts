/**
 * The sandbox's seccomp filter, as data (the rules) and a small encoder (classic BPF, the format
 * bubblewrap's `--seccomp FD` loads). No maintained npm package builds a cBPF program without a native
 * addon (libseccomp bindings need a compiler at install time), and the program we need is a few dozen
 * instructions, so it is written here and proven by an interpreter in the tests.
 *
 * What it refuses, and why (docs/host.md "Threat model" lists the same):
 * - setuid and setgid bits, as systemd's `RestrictSUIDSGID=` does: a file a guest marks setuid in a
 *   writable path is setuid on the host, where no `nosuid` mount protects it.
 * - new user namespaces (`clone`/`unshare` with CLONE_NEWUSER): they hand a process every capability
 *   inside them, the door to most kernel attack surface a guest could otherwise not reach.
 * - calls a guest has no use for and that widen the kernel it can reach: tracing other processes,
 *   kernel keyrings, eBPF, perf events, userfaultfd, io_uring (it bypasses seccomp for the calls it
 *   makes), mounting, module loading, kexec, swap, reboot, accounting, quotas and the kernel log.
 * - socket families a guest has no use for: the network namespace covers IP but not AF_VSOCK (a VM's
 *   channel to its hypervisor and host, which shares the host's port space), nor the many other
 *   families whose kernel code is reachable without one. Allowed: AF_UNIX (Node's own pipes and socket
 *   pairs) and AF_NETLINK's routing protocol only (the interface list, `os.networkInterfaces()`: in the
 *   sandbox's own network namespace, its loopback); with the network also AF_INET and AF_INET6. Under
 *   Landlock (no mount namespace, landlock.ts) `socket(AF_UNIX)` is refused too, `socketpair` keeps it.
 * Anything not listed is allowed: the sandbox's namespaces and dropped capabilities do the rest.
 */

/** The processor architectures the filter knows; elsewhere the sandbox runs without one (reported). */
export type SeccompArch = "x64" | "arm64";

/** What the filter does with one system call. */
export type SeccompAction =
  /** Always fails with EPERM. */
  | { kind: "deny" }
  /** Fails with ENOSYS, so the C library falls back to an older call whose arguments the filter can see (clone3 → clone). */
  | { kind: "unsupported" }
  /**
   * Fails with EPERM when argument `arg` has any bit of `mask` set; with `when`, only if argument
   * `when.arg` also has a bit of `when.mask` (open's mode matters only when it creates a file).
   */
  | { kind: "denyBits"; arg: number; mask: number; when?: { arg: number; mask: number } }
  /**
   * Fails with `errno` unless argument `arg` is one of `values` (a socket's family), and, for a value with
   * `only`, argument `only.arg` is `only.value` too (the family's protocol).
   */
  | { kind: "allowOnly"; arg: number; values: readonly AllowedValue[]; errno: number };

/** One value an `allowOnly` rule lets through. */
export interface AllowedValue {
  value: number;
  only?: { arg: number; value: number };
}

/** What the filter depends on besides the architecture. */
export interface SeccompOptions {
  /** Whether the guest shares the host's network (more socket families are then allowed). */
  network: boolean;
  /**
   * Whether `socket(AF_UNIX)` is allowed (default true). Under bubblewrap the mount namespace shows no host
   * socket; under Landlock (up to ABI 7, which does not mediate connecting to a pathname socket) a unix socket
   * could reach any the host has, so only `socketpair` keeps AF_UNIX (Node's own pipes).
   */
  unixSockets?: boolean;
}

export interface SeccompRule {
  /** The system call's name (for messages and docs). */
  name: string;
  /** Its number on each architecture; absent where the architecture has no such call. */
  numbers: Partial<Record<SeccompArch, number>>;
  action: SeccompAction;
}

/** S_ISUID | S_ISGID. */
export const SET_ID_BITS = 0o6000;
/** O_CREAT | __O_TMPFILE: the open flags under which the mode argument is used. */
export const CREATING_OPEN = 0o100 | 0o20000000;
export const CLONE_NEWUSER = 0x10000000;
/** Address families (linux/socket.h). */
export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_VSOCK = 40;
/** What a refused family gets: "not supported", which programs already handle (an IPv6-less host says the same). */
export const EAFNOSUPPORT = 97;

/** NETLINK_ROUTE: the interface and address lists. */
export const NETLINK_ROUTE = 0;

/** The socket families a guest may create (socket's and socketpair's first argument; the protocol is the third). */
export function socketFamilies(options: SeccompOptions): AllowedValue[] {
  const local: AllowedValue[] = [{ value: AF_UNIX }, { value: AF_NETLINK, only: { arg: 2, value: NETLINK_ROUTE } }];
  return options.network ? [...local, { value: AF_INET }, { value: AF_INET6 }] : local;
}

const setId = (arg: number): SeccompAction => ({ kind: "denyBits", arg, mask: SET_ID_BITS });
const creatingSetId = (flagsArg: number, modeArg: number): SeccompAction => ({
  kind: "denyBits",
  arg: modeArg,
  mask: SET_ID_BITS,
  when: { arg: flagsArg, mask: CREATING_OPEN },
});
const deny: SeccompAction = { kind: "deny" };

/**
 * The rules, one per system call (numbers from the kernel's unistd_64.h and asm-generic/unistd.h); why
 * each is refused is in this file's header and docs/host.md. Built when asked (once per run), not at
 * load: a module-level table would make each of its values a mutant every test must run for.
 */
export function seccompRules(options: SeccompOptions = { network: false }): readonly SeccompRule[] {
  const families: SeccompAction = { kind: "allowOnly", arg: 0, values: socketFamilies(options), errno: EAFNOSUPPORT };
  const socketValues = socketFamilies(options).filter(({ value }) => options.unixSockets !== false || value !== AF_UNIX);
  const sockets: SeccompAction = { kind: "allowOnly", arg: 0, values: socketValues, errno: EAFNOSUPPORT };
  return [
    { name: "socket", numbers: { x64: 41, arm64: 198 }, action: sockets },
    { name: "socketpair", numbers: { x64: 53, arm64: 199 }, action: families },
    { name: "chmod", numbers: { x64: 90 }, action: setId(1) },
    { name: "fchmod", numbers: { x64: 91, arm64: 52 }, action: setId(1) },
    { name: "fchmodat", numbers: { x64: 268, arm64: 53 }, action: setId(2) },
    { name: "fchmodat2", numbers: { x64: 452, arm64: 452 }, action: setId(2) },
    { name: "open", numbers: { x64: 2 }, action: creatingSetId(1, 2) },
    { name: "openat", numbers: { x64: 257, arm64: 56 }, action: creatingSetId(2, 3) },
    { name: "creat", numbers: { x64: 85 }, action: setId(1) },
    { name: "openat2", numbers: { x64: 437, arm64: 437 }, action: { kind: "unsupported" } },
    { name: "mkdir", numbers: { x64: 83 }, action: setId(1) },
    { name: "mkdirat", numbers: { x64: 258, arm64: 34 }, action: setId(2) },
    { name: "mknod", numbers: { x64: 133 }, action: setId(1) },
    { name: "mknodat", numbers: { x64: 259, arm64: 33 }, action: setId(2) },
    { name: "clone", numbers: { x64: 56, arm64: 220 }, action: { kind: "denyBits", arg: 0, mask: CLONE_NEWUSER } },
    { name: "clone3", numbers: { x64: 435, arm64: 435 }, action: { kind: "unsupported" } },
    { name: "unshare", numbers: { x64: 272, arm64: 97 }, action: { kind: "denyBits", arg: 0, mask: CLONE_NEWUSER } },
    { name: "setns", numbers: { x64: 308, arm64: 268 }, action: deny },
    { name: "ptrace", numbers: { x64: 101, arm64: 117 }, action: deny },
    { name: "process_vm_readv", numbers: { x64: 310, arm64: 270 }, action: deny },
    { name: "process_vm_writev", numbers: { x64: 311, arm64: 271 }, action: deny },
    { name: "keyctl", numbers: { x64: 250, arm64: 219 }, action: deny },
    { name: "add_key", numbers: { x64: 248, arm64: 217 }, action: deny },
    { name: "request_key", numbers: { x64: 249, arm64: 218 }, action: deny },
    { name: "bpf", numbers: { x64: 321, arm64: 280 }, action: deny },
    { name: "perf_event_open", numbers: { x64: 298, arm64: 241 }, action: deny },
    { name: "userfaultfd", numbers: { x64: 323, arm64: 282 }, action: deny },
    { name: "io_uring_setup", numbers: { x64: 425, arm64: 425 }, action: deny },
    { name: "io_uring_enter", numbers: { x64: 426, arm64: 426 }, action: deny },
    { name: "io_uring_register", numbers: { x64: 427, arm64: 427 }, action: deny },
    { name: "mount", numbers: { x64: 165, arm64: 40 }, action: deny },
    { name: "umount2", numbers: { x64: 166, arm64: 39 }, action: deny },
    { name: "pivot_root", numbers: { x64: 155, arm64: 41 }, action: deny },
    { name: "open_tree", numbers: { x64: 428, arm64: 428 }, action: deny },
    { name: "move_mount", numbers: { x64: 429, arm64: 429 }, action: deny },
    { name: "fsopen", numbers: { x64: 430, arm64: 430 }, action: deny },
    { name: "fsconfig", numbers: { x64: 431, arm64: 431 }, action: deny },
    { name: "fsmount", numbers: { x64: 432, arm64: 432 }, action: deny },
    { name: "fspick", numbers: { x64: 433, arm64: 433 }, action: deny },
    { name: "mount_setattr", numbers: { x64: 442, arm64: 442 }, action: deny },
    { name: "open_by_handle_at", numbers: { x64: 304, arm64: 265 }, action: deny },
    { name: "init_module", numbers: { x64: 175, arm64: 105 }, action: deny },
    { name: "finit_module", numbers: { x64: 313, arm64: 273 }, action: deny },
    { name: "delete_module", numbers: { x64: 176, arm64: 106 }, action: deny },
    { name: "kexec_load", numbers: { x64: 246, arm64: 104 }, action: deny },
    { name: "kexec_file_load", numbers: { x64: 320, arm64: 294 }, action: deny },
    { name: "swapon", numbers: { x64: 167, arm64: 224 }, action: deny },
    { name: "swapoff", numbers: { x64: 168, arm64: 225 }, action: deny },
    { name: "reboot", numbers: { x64: 169, arm64: 142 }, action: deny },
    { name: "acct", numbers: { x64: 163, arm64: 89 }, action: deny },
    { name: "quotactl", numbers: { x64: 179, arm64: 60 }, action: deny },
    { name: "syslog", numbers: { x64: 103, arm64: 116 }, action: deny },
    { name: "lookup_dcookie", numbers: { x64: 212, arm64: 18 }, action: deny },
  ];
}

/** The kernel's AUDIT_ARCH value for each architecture (seccomp_data.arch). */
export const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
/** On x86-64, numbers with this bit are the x32 ABI: a second numbering a filter must not let through. */
export const X32_BIT = 0x40000000;

export const RET_ALLOW = 0x7fff0000;
export const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
export const EPERM = 1;
export const ENOSYS = 38;

/** One classic BPF instruction (struct sock_filter). */
export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

// Opcodes (linux/bpf_common.h).
export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JGE_K = 0x35;
export const BPF_JSET_K = 0x45;
export const BPF_RET_K = 0x06;

/** Offsets in struct seccomp_data: the call's number, the architecture, then six 64-bit arguments. */
const NR = 0;
const ARCH = 4;
/** The low 32 bits of argument `n` (little-endian: both architectures here). */
const argLow = (n: number) => 16 + 8 * n;

/** The architecture of this process, or undefined when the filter does not know it. */
export function seccompArch(arch: string = process.arch): SeccompArch | undefined {
  return arch === "x64" || arch === "arm64" ? arch : undefined;
}

/**
 * The filter for `arch` as instructions. Layout: a wrong architecture (a 32-bit call into a 64-bit
 * kernel numbers its calls differently) is killed; on x86-64 an x32 number is refused; then one
 * comparison per rule, each jumping to its own short check; whatever matched no rule is allowed.
 */
export function seccompInstructions(arch: SeccompArch, options: SeccompOptions = { network: false }): BpfInstruction[] {
  const rules = seccompRules(options).filter((rule) => rule.numbers[arch] !== undefined);
  // Each rule's check is a block placed after the dispatch table; the table jumps to it by offset.
  const blocks = rules.map((rule) => checkBlock(rule.action));
  const head: BpfInstruction[] = [
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: ARCH },
    { code: BPF_JEQ_K, jt: 1, jf: 0, k: AUDIT_ARCH[arch] },
    { code: BPF_RET_K, jt: 0, jf: 0, k: RET_KILL_PROCESS },
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: NR },
  ];
  if (arch === "x64") {
    head.push({ code: BPF_JGE_K, jt: 0, jf: 1, k: X32_BIT }, { code: BPF_RET_K, jt: 0, jf: 0, k: RET_ERRNO | EPERM });
  }
  // Dispatch: rule i's comparison is followed by the comparisons after it, then ALLOW, then the blocks.
  const dispatch: BpfInstruction[] = [];
  let blockOffset = 0;
  rules.forEach((rule, i) => {
    const remaining = rules.length - i - 1; // comparisons after this one
    const jt = remaining + 1 + blockOffset; // past them and the ALLOW, to this rule's block
    if (jt > 255) throw new Error("seccomp: the filter outgrew one jump (255 instructions)");
    dispatch.push({ code: BPF_JEQ_K, jt, jf: 0, k: rule.numbers[arch]! });
    blockOffset += blocks[i]!.length;
  });
  dispatch.push({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ALLOW });
  return [...head, ...dispatch, ...blocks.flat()];
}

/** The instructions that decide one matched call (the call's number is in the accumulator). */
function checkBlock(action: SeccompAction): BpfInstruction[] {
  const ret = (k: number): BpfInstruction => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
  switch (action.kind) {
    case "deny":
      return [ret(RET_ERRNO | EPERM)];
    case "unsupported":
      return [ret(RET_ERRNO | ENOSYS)];
    case "denyBits": {
      const test = [
        { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: argLow(action.arg) },
        // Bits set: EPERM (the next instruction); none: ALLOW (the one after).
        { code: BPF_JSET_K, jt: 0, jf: 1, k: action.mask },
        ret(RET_ERRNO | EPERM),
        ret(RET_ALLOW),
      ];
      if (action.when === undefined) return test;
      // Not creating: ALLOW (past the mode test); creating: go on to the mode test.
      return [
        { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: argLow(action.when.arg) },
        { code: BPF_JSET_K, jt: 1, jf: 0, k: action.when.mask },
        ret(RET_ALLOW),
        ...test,
      ];
    }
    case "allowOnly": {
      // Layout: load; one comparison per value; the refusal; ALLOW; then a check of its own for each value with `only`.
      const refuse = ret(RET_ERRNO | action.errno);
      const count = action.values.length;
      const compare: BpfInstruction[] = [];
      const checks: BpfInstruction[] = [];
      action.values.forEach(({ value, only }, i) => {
        const toAllow = count - i; // past the comparisons after this one and the refusal
        compare.push({ code: BPF_JEQ_K, jt: only === undefined ? toAllow : toAllow + 1 + checks.length, jf: 0, k: value });
        if (only !== undefined) {
          checks.push(
            { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: argLow(only.arg) },
            { code: BPF_JEQ_K, jt: 1, jf: 0, k: only.value },
            refuse,
            ret(RET_ALLOW),
          );
        }
      });
      return [{ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: argLow(action.arg) }, ...compare, refuse, ret(RET_ALLOW), ...checks];
    }
  }
}

/** The filter as bytes (struct sock_filter[], little-endian), what `bwrap --seccomp FD` reads. */
export function encodeBpf(instructions: readonly BpfInstruction[]): Buffer {
  const bytes = Buffer.alloc(instructions.length * 8);
  instructions.forEach(({ code, jt, jf, k }, i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}

/** The encoded filter for this process's architecture, or undefined where there is none. */
export function seccompProgram(options: SeccompOptions = { network: false }, arch: string = process.arch): Buffer | undefined {
  const known = seccompArch(arch);
  return known === undefined ? undefined : encodeBpf(seccompInstructions(known, options));
}
