/*
 * ears-confine: confines one command with Landlock, seccomp and no_new_privs, for hosts where bubblewrap
 * cannot start (no user namespaces). Every argument is data from the host; the grammar is in usage() and
 * docs/host.md ("Landlock"). It stays the command's parent and a child subreaper, so when the command
 * exits (or the host dies) it kills every process left in the run's tree, then exits with the command's
 * status (a signal as 128+n, like a shell).
 *
 * Exit codes of its own (stderr says why, on one line starting "ears-confine:"):
 *   120  malformed arguments            121  the kernel's Landlock is missing or older than required
 *   122  a rule could not be applied    123  the run could not be set up (fork, the private directory)
 *   126  the command could not be run   127  the command was not found
 * It never runs the command half-confined: any failure before exec ends the run with one of these.
 *
 * Built static (musl on x86-64, glibc's static libc on arm64); the kernel's UAPI structures are declared
 * here, since musl ships no linux/ headers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 120
#define EXIT_ABI 121
#define EXIT_RULE 122
#define EXIT_SETUP 123
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

/* The lowest ABI the helper runs at: 6, the first with signal and abstract-socket scoping (4 brought TCP). */
#define ABI_FLOOR 6

/* linux/landlock.h */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
/* linux/openat2.h */
struct open_how {
  uint64_t flags, mode, resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define LANDLOCK_RULE_PATH_BENEATH 1
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REMOVE_DIR (1ULL << 4)
#define FS_REMOVE_FILE (1ULL << 5)
#define FS_MAKE_CHAR (1ULL << 6)
#define FS_MAKE_DIR (1ULL << 7)
#define FS_MAKE_REG (1ULL << 8)
#define FS_MAKE_SOCK (1ULL << 9)
#define FS_MAKE_FIFO (1ULL << 10)
#define FS_MAKE_BLOCK (1ULL << 11)
#define FS_MAKE_SYM (1ULL << 12)
#define FS_REFER (1ULL << 13)
#define FS_TRUNCATE (1ULL << 14)
#define FS_IOCTL_DEV (1ULL << 15)
#define NET_BIND_TCP (1ULL << 0)
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

/* linux/capability.h, linux/seccomp.h, linux/filter.h */
#define CAPABILITY_VERSION_3 0x20080522
struct cap_header {
  uint32_t version;
  int pid;
};
struct cap_data {
  uint32_t effective, permitted, inheritable;
};
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef PR_SET_CHILD_SUBREAPER
#define PR_SET_CHILD_SUBREAPER 36
#endif
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif
#define SECCOMP_MODE_FILTER_ 2
struct bpf_insn {
  uint16_t code;
  uint8_t jt, jf;
  uint32_t k;
};
struct bpf_prog {
  unsigned short len;
  struct bpf_insn *filter;
};
#define BPF_MAX_INSNS 4096

static void remove_tmp(void);
static pid_t helper_pid;

/* Writes one line on stderr and exits with `code`; in the helper itself, the private directory goes first. */
static void die(int code, const char *format, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(line, sizeof line - 1, format, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  /* One write: the host reads the line whole. */
  ssize_t ignored = write(2, line, (size_t)n);
  (void)ignored;
  if (getpid() == helper_pid) remove_tmp();
  _exit(code);
}

static const char *usage_text =
    "usage: ears-confine [--ro PATH]... [--rw PATH]... [--list DIR]... [--env NAME=VALUE]... [--tmp DIR] [--seccomp-fd N]\n"
    "                    [--net] [--abi-min N] [--parent PID] -- /absolute/command [ARG]...\n"
    "       ears-confine --self-test [--abi-min N]\n";

/* ---- Arguments ---------------------------------------------------------------------------------- */

/* What a rule grants beneath its path. */
enum grant { GRANT_LIST, GRANT_READ, GRANT_WRITE };

struct rule {
  const char *path;
  enum grant grant;
};

struct options {
  struct rule *rules;
  size_t rule_count;
  char **env;
  size_t env_count;
  const char *tmp;
  int seccomp_fd; /* -1: none */
  int net;
  int abi_min;
  long parent; /* 0: none */
  int self_test;
  char **command; /* NULL-terminated, or NULL */
};

/* A decimal number without sign or leading zero, at most `max`; -1 when it is not one. */
static long number(const char *text, long max) {
  size_t len = strlen(text);
  if (len == 0 || len > 10 || (len > 1 && text[0] == '0')) return -1;
  long value = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value > max ? -1 : value;
}

static int env_name_char(char c, int first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

#define USAGE(...) die(EXIT_USAGE, "ears-confine: usage: " __VA_ARGS__)

static void parse(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->seccomp_fd = -1;
  o->rules = calloc((size_t)argc, sizeof *o->rules);
  o->env = calloc((size_t)argc + 3, sizeof *o->env);
  if (o->rules == NULL || o->env == NULL) die(EXIT_SETUP, "ears-confine: out of memory");
  int seen_abi = 0, seen_tmp = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) {
      i++;
      break;
    }
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(arg, "--net") == 0) {
      if (o->net) USAGE("--net given twice");
      o->net = 1;
      continue;
    }
    if (strcmp(arg, "--self-test") == 0) {
      if (o->self_test) USAGE("--self-test given twice");
      o->self_test = 1;
      continue;
    }
    if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0 || strcmp(arg, "--list") == 0 || strcmp(arg, "--tmp") == 0) {
      if (value == NULL) USAGE("%s needs a path", arg);
      if (value[0] != '/') USAGE("%s needs an absolute path, not \"%.200s\"", arg, value);
      if (strlen(value) >= PATH_MAX) USAGE("%s path is longer than %d bytes", arg, PATH_MAX - 1);
      if (arg[2] == 't') {
        if (seen_tmp++) USAGE("--tmp given twice");
        o->tmp = value;
      } else {
        o->rules[o->rule_count].path = value;
        o->rules[o->rule_count].grant = arg[2] == 'l' ? GRANT_LIST : arg[3] == 'w' ? GRANT_WRITE : GRANT_READ;
        o->rule_count++;
      }
      i++;
      continue;
    }
    if (strcmp(arg, "--env") == 0) {
      if (value == NULL) USAGE("--env needs NAME=VALUE");
      const char *eq = strchr(value, '=');
      if (eq == NULL || eq == value) USAGE("--env needs NAME=VALUE, not \"%.200s\"", value);
      for (const char *c = value; c < eq; c++) {
        if (!env_name_char(*c, c == value)) USAGE("--env name in \"%.200s\" is not letters, digits and _", value);
      }
      o->env[o->env_count++] = argv[i + 1];
      i++;
      continue;
    }
    if (strcmp(arg, "--seccomp-fd") == 0 || strcmp(arg, "--abi-min") == 0 || strcmp(arg, "--parent") == 0) {
      if (value == NULL) USAGE("%s needs a number", arg);
      long max = arg[2] == 's' ? 1023 : arg[2] == 'a' ? 255 : 4194304;
      long n = number(value, max);
      if (n < 0) USAGE("%s needs a decimal number up to %ld, not \"%.200s\"", arg, max, value);
      if (arg[2] == 's') {
        if (o->seccomp_fd >= 0) USAGE("--seccomp-fd given twice");
        if (n < 3) USAGE("--seccomp-fd must be 3 or more (0-2 are stdio)");
        o->seccomp_fd = (int)n;
      } else if (arg[2] == 'a') {
        if (seen_abi++) USAGE("--abi-min given twice");
        if (n < 1) USAGE("--abi-min must be 1 or more");
        o->abi_min = (int)n;
      } else {
        if (o->parent != 0) USAGE("--parent given twice");
        if (n < 1) USAGE("--parent must be a process id (1 or more)");
        o->parent = n;
      }
      i++;
      continue;
    }
    if (strcmp(arg, "--help") == 0) {
      ssize_t ignored = write(1, usage_text, strlen(usage_text));
      (void)ignored;
      _exit(0);
    }
    USAGE("unknown argument \"%.200s\" (before --)", arg);
  }
  if (o->self_test) {
    if (i <= argc && i > 1 && strcmp(argv[i - 1], "--") == 0) USAGE("--self-test takes no command");
    if (o->rule_count > 0 || o->env_count > 0 || o->tmp != NULL || o->seccomp_fd >= 0 || o->net || o->parent != 0) {
      USAGE("--self-test takes only --abi-min");
    }
    return;
  }
  if (i > argc || strcmp(argv[i - 1], "--") != 0) USAGE("the command must follow --");
  if (i >= argc) USAGE("no command after --");
  if (argv[i][0] != '/') USAGE("the command must be an absolute path, not \"%.200s\"", argv[i]);
  o->command = &argv[i];
}

/* ---- Landlock ------------------------------------------------------------------------------------ */

static int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_rights(int abi) {
  uint64_t rights = (FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0-12 */
  if (abi >= 2) rights |= FS_REFER;
  if (abi >= 3) rights |= FS_TRUNCATE;
  if (abi >= 5) rights |= FS_IOCTL_DEV;
  return rights;
}

static const uint64_t file_only = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

/* The ruleset for `o` at `abi`: every right handled; the rules grant what the host listed. Exits 122 on a rule. */
static int make_ruleset(const struct options *o, int abi, const char *tmp_dir) {
  struct ruleset_attr attr = {0};
  attr.handled_access_fs = fs_rights(abi);
  if (!o->net) attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
  attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
  int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (fd < 0) die(EXIT_RULE, "ears-confine: the Landlock ruleset could not be created: %s", strerror(errno));
  size_t count = o->rule_count + (tmp_dir != NULL ? 1 : 0);
  for (size_t r = 0; r < count; r++) {
    const char *path = r < o->rule_count ? o->rules[r].path : tmp_dir;
    enum grant grant = r < o->rule_count ? o->rules[r].grant : GRANT_WRITE;
    const char *flag = grant == GRANT_WRITE ? "--rw" : grant == GRANT_READ ? "--ro" : "--list";
    /* No link is followed on the way: the host names real paths, and a link swapped in since would widen the grant. */
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .mode = 0, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int target = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (target < 0 && errno == ELOOP) die(EXIT_RULE, "ears-confine: cannot apply %s %s: a symbolic link is on its way (give real paths)", flag, path);
    if (target < 0) die(EXIT_RULE, "ears-confine: cannot apply %s %s: %s", flag, path, strerror(errno));
    struct stat st;
    if (fstat(target, &st) != 0) die(EXIT_RULE, "ears-confine: cannot apply %s %s: %s", flag, path, strerror(errno));
    uint64_t allowed = grant == GRANT_WRITE ? fs_rights(abi) : grant == GRANT_READ ? (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR) : FS_READ_DIR;
    if (!S_ISDIR(st.st_mode)) {
      if (grant == GRANT_LIST) die(EXIT_RULE, "ears-confine: cannot apply --list %s: not a directory", path);
      allowed &= file_only;
    }
    struct path_beneath_attr rule = {.allowed_access = allowed & fs_rights(abi), .parent_fd = target};
    if (syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      die(EXIT_RULE, "ears-confine: cannot apply %s %s: %s", flag, path, strerror(errno));
    }
    close(target);
  }
  return fd;
}

/* ---- Capabilities, seccomp -------------------------------------------------------------------- */

/* Every capability dropped for good: bounding set (where this process may), ambient, then the sets. */
static void drop_capabilities(void) {
  for (int cap = 0; cap < 64; cap++) {
    int held = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (held < 0) break; /* past the kernel's last capability */
    /* Without CAP_SETPCAP the bounding set stays; the empty sets and no_new_privs keep exec from regaining any. */
    if (held == 1) (void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    die(EXIT_RULE, "ears-confine: cannot clear the ambient capabilities: %s", strerror(errno));
  }
  struct cap_header header = {CAPABILITY_VERSION_3, 0};
  struct cap_data data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die(EXIT_RULE, "ears-confine: cannot drop capabilities: %s", strerror(errno));
  if (syscall(SYS_capget, &header, data) != 0 || data[0].effective || data[0].permitted || data[1].effective || data[1].permitted) {
    die(EXIT_RULE, "ears-confine: capabilities are still held after dropping them");
  }
}

/* The seccomp program on `fd`, read to its end (struct sock_filter[], as bubblewrap's --seccomp reads it). */
static struct bpf_prog read_seccomp(int fd) {
  size_t cap = BPF_MAX_INSNS * sizeof(struct bpf_insn), len = 0;
  unsigned char *bytes = malloc(cap + 1);
  if (bytes == NULL) die(EXIT_SETUP, "ears-confine: out of memory");
  for (;;) {
    ssize_t n = read(fd, bytes + len, cap + 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die(EXIT_RULE, "ears-confine: cannot read the seccomp program on descriptor %d: %s", fd, strerror(errno));
    if (n == 0) break;
    len += (size_t)n;
    if (len > cap) die(EXIT_RULE, "ears-confine: the seccomp program on descriptor %d is over %d instructions", fd, BPF_MAX_INSNS);
  }
  close(fd);
  if (len == 0 || len % sizeof(struct bpf_insn) != 0) {
    die(EXIT_RULE, "ears-confine: the seccomp program on descriptor %d is %zu bytes, not whole instructions", fd, len);
  }
  struct bpf_prog prog = {(unsigned short)(len / sizeof(struct bpf_insn)), (struct bpf_insn *)bytes};
  return prog;
}

/* ---- The run's tree ------------------------------------------------------------------------------ */

struct pids {
  pid_t *items;
  size_t len, cap;
};

static void push(struct pids *list, pid_t pid) {
  if (list->len == list->cap) {
    size_t cap = list->cap == 0 ? 64 : list->cap * 2;
    pid_t *grown = realloc(list->items, cap * sizeof *grown);
    if (grown == NULL) return; /* the next round sees the rest */
    list->items = grown;
    list->cap = cap;
  }
  list->items[list->len++] = pid;
}

/* Appends the children of every thread of `pid` (Linux's /proc/<pid>/task/<tid>/children). */
static void children_of(pid_t pid, struct pids *out) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *tasks = opendir(path);
  if (tasks == NULL) return;
  struct dirent *task;
  while ((task = readdir(tasks)) != NULL) {
    if (task->d_name[0] < '0' || task->d_name[0] > '9') continue;
    char file[128];
    snprintf(file, sizeof file, "/proc/%d/task/%.20s/children", (int)pid, task->d_name);
    FILE *f = fopen(file, "re");
    if (f == NULL) continue;
    long child;
    while (fscanf(f, "%ld", &child) == 1) {
      if (child > 1) push(out, (pid_t)child);
    }
    fclose(f);
  }
  closedir(tasks);
}

/*
 * Kills every descendant and reaps them, until none is left. A process forked while the tree is walked is
 * found in the next round: its parent, killed, hands it to this process (the subreaper), as setsid does not
 * escape that. `command` gets its status recorded when it is reaped here.
 */
static void kill_tree(pid_t command, int *status, int *command_done) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    struct pids tree = {0};
    children_of(getpid(), &tree);
    for (size_t at = 0; at < tree.len; at++) {
      kill(tree.items[at], SIGKILL);
      /* A stopped or frozen parent cannot hand its children over yet: walk them too. */
      children_of(tree.items[at], &tree);
    }
    free(tree.items);
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      if (pid == command && !*command_done) {
        *status = st;
        *command_done = 1;
      }
    }
    if (pid < 0 && errno == ECHILD) return;
    struct timespec wait = {0, 20 * 1000 * 1000};
    (void)sigtimedwait(&chld, NULL, &wait);
  }
}

static const char *tmp_dir_made;

/* Removes one entry; a failure is passed over (the walk goes on with the rest). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP || flag == FTW_D) (void)rmdir(path);
  else (void)unlink(path);
  return 0;
}

static void remove_tmp(void) {
  if (tmp_dir_made == NULL) return;
  /* Depth first, no link followed, never past a mount: the tree is dead, so nothing changes it now. */
  (void)nftw(tmp_dir_made, remove_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  tmp_dir_made = NULL;
}

static int exit_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return EXIT_SETUP;
}

/* ---- Self-test ----------------------------------------------------------------------------------- */

/* In a child: restricts itself with no rule and checks the kernel refuses a read, a TCP bind and a signal out. */
static int self_test(int abi_min) {
  int abi = landlock_abi();
  int need = abi_min > ABI_FLOOR ? abi_min : ABI_FLOOR;
  if (abi == 0) die(EXIT_ABI, "ears-confine: this kernel offers no Landlock (Linux 6.12 or later with Landlock enabled is needed)");
  if (abi < need) die(EXIT_ABI, "ears-confine: this kernel's Landlock ABI is %d, below the %d required", abi, need);
  struct options none;
  memset(&none, 0, sizeof none);
  int ruleset = make_ruleset(&none, abi, NULL);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) die(EXIT_SETUP, "ears-confine: fork: %s", strerror(errno));
  if (child == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) _exit(11);
    if (open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) >= 0 || errno != EACCES) _exit(12);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    if (s >= 0 && (bind(s, (struct sockaddr *)&any, sizeof any) == 0 || errno != EACCES)) _exit(13);
    if (kill(parent, 0) == 0 || errno != EPERM) _exit(14);
    _exit(0);
  }
  int st;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    static const char *what[] = {"no_new_privs", "restricting itself", "refusing a read", "refusing a TCP bind", "refusing a signal"};
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    die(EXIT_RULE, "ears-confine: Landlock ABI %d did not enforce its rules here (%s failed)", abi,
        code >= 10 && code <= 14 ? what[code - 10] : "the check");
  }
  printf("landlock-abi %d ok\n", abi);
  return 0;
}

/* ---- Main ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  struct options o;
  helper_pid = getpid();
  parse(argc, argv, &o);
  if (o.self_test) return self_test(o.abi_min);

  int need = o.abi_min > ABI_FLOOR ? o.abi_min : ABI_FLOOR;
  int abi = landlock_abi();
  if (abi == 0) die(EXIT_ABI, "ears-confine: this kernel offers no Landlock (Linux 6.12 or later with Landlock enabled is needed)");
  if (abi < need) die(EXIT_ABI, "ears-confine: this kernel's Landlock ABI is %d, below the %d required", abi, need);

  /* The host's death ends the run: SIGTERM (handled below) when the parent goes, then a check it has not gone already. */
  if (o.parent != 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0) die(EXIT_SETUP, "ears-confine: PR_SET_PDEATHSIG: %s", strerror(errno));
    if (getppid() != (pid_t)o.parent) die(EXIT_SETUP, "ears-confine: the host (pid %ld) is gone", o.parent);
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die(EXIT_SETUP, "ears-confine: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));

  sigset_t handled, original;
  sigemptyset(&handled);
  int ending[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD};
  for (size_t s = 0; s < sizeof ending / sizeof *ending; s++) sigaddset(&handled, ending[s]);
  sigprocmask(SIG_BLOCK, &handled, &original);

  struct bpf_prog filter = {0, NULL};
  if (o.seccomp_fd >= 0) filter = read_seccomp(o.seccomp_fd);

  char tmp_template[PATH_MAX + 32];
  char home[PATH_MAX + 64], tmp_env[PATH_MAX + 64], home_env[PATH_MAX + 96];
  if (o.tmp != NULL) {
    snprintf(tmp_template, sizeof tmp_template, "%s/ears-confine-XXXXXX", o.tmp);
    if (mkdtemp(tmp_template) == NULL) die(EXIT_SETUP, "ears-confine: cannot make a private directory in %s: %s", o.tmp, strerror(errno));
    tmp_dir_made = tmp_template;
    snprintf(home, sizeof home, "%s/home", tmp_template);
    if (mkdir(home, 0700) != 0) die(EXIT_SETUP, "ears-confine: cannot make %s: %s", home, strerror(errno));
    /* TMPDIR and HOME are the private directory's, whatever --env said. */
    size_t kept = 0;
    for (size_t e = 0; e < o.env_count; e++) {
      if (strncmp(o.env[e], "TMPDIR=", 7) != 0 && strncmp(o.env[e], "HOME=", 5) != 0) o.env[kept++] = o.env[e];
    }
    snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", tmp_template);
    snprintf(home_env, sizeof home_env, "HOME=%s", home);
    o.env[kept++] = tmp_env;
    o.env[kept++] = home_env;
    o.env_count = kept;
  }
  o.env[o.env_count] = NULL;

  /* Rules are built here, in the unconfined parent, so a failure is reported before anything runs. */
  int ruleset = make_ruleset(&o, abi, tmp_dir_made);

  pid_t command = fork();
  if (command < 0) die(EXIT_SETUP, "ears-confine: fork: %s", strerror(errno));
  if (command == 0) {
    /* Its own session (no controlling terminal to push input into), killed should this helper die. */
    if (setsid() < 0) die(EXIT_SETUP, "ears-confine: setsid: %s", strerror(errno));
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die(EXIT_SETUP, "ears-confine: PR_SET_PDEATHSIG: %s", strerror(errno));
    drop_capabilities();
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(EXIT_RULE, "ears-confine: no_new_privs: %s", strerror(errno));
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
      die(EXIT_RULE, "ears-confine: landlock_restrict_self: %s", strerror(errno));
    }
    close(ruleset);
    if (filter.filter != NULL && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER_, &filter, 0, 0) != 0) {
      die(EXIT_RULE, "ears-confine: the seccomp program could not be loaded: %s", strerror(errno));
    }
    sigprocmask(SIG_SETMASK, &original, NULL);
    execve(o.command[0], o.command, o.env);
    die(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC, "ears-confine: cannot run %s: %s", o.command[0], strerror(errno));
  }
  close(ruleset);
  free(filter.filter);
  /*
   * The guest alone holds its stdio now: the host sees end-of-file when the guest's tree closes its output, as
   * with an unconfined guest. Nothing is written here after this (failures before exec were the child's).
   */
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd = 0; fd <= 2; fd++) (void)dup2(null, fd);
    if (null > 2) close(null);
  }

  int status = 0, done = 0, ended_by = 0;
  while (!done && ended_by == 0) {
    siginfo_t info;
    int sig = sigwaitinfo(&handled, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      ended_by = sig;
      break;
    }
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      if (pid == command) {
        status = st;
        done = 1;
      }
    }
  }
  kill_tree(command, &status, &done);
  remove_tmp();
  if (ended_by != 0) {
    /* Ended from outside (the host, or its death): end the same way, so the host sees the signal. */
    signal(ended_by, SIG_DFL);
    sigprocmask(SIG_SETMASK, &original, NULL);
    raise(ended_by);
    _exit(128 + ended_by);
  }
  return exit_status(status);
}
