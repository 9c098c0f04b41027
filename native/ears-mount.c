/*
 * ears-mount: the host's mount helper on a root host. One long-lived process makes the bounded directories'
 * mounts on request (src/host/workspace/mount-helper.ts), so a mount costs the host a round trip on a pipe
 * instead of a fork of the host and an exec of mount(8).
 *
 * Requests on stdin, handled one at a time, in order: a verb byte, then its fields, each ended by a NUL byte.
 *   t DIR DATA SHARED  a tmpfs (nosuid, nodev; DATA its options: size, nr_inodes, mode) on DIR; with SHARED
 *                      "1" its propagation is then made private and shared (a peer group of its own)
 *   s DIR              DIR bound onto itself, then made private and shared
 *   b SOURCE TARGET    SOURCE bound onto TARGET (not recursive, as mount --bind)
 *   u DIR              DIR detached lazily (MNT_DETACH, as umount -l)
 *   r DIR              the filesystem mounted on DIR made read-only (its superblock, so every mount of it,
 *                      also the copies in sandboxes' namespaces); EBUSY while a file on it is open for writing
 *   w DIR              the same made writable again
 * One reply line per request on stdout: "ok", or "error STEP: MESSAGE" (STEP the call that failed). A mount
 * whose propagation could not be set is detached again before the error is written, so a failed request
 * leaves nothing mounted. Paths are the host's (it made every one of them); nothing here reads another
 * source. It exits 0 when stdin ends (the host closed it or exited), 2 on a malformed request, and is killed
 * with the host (PR_SET_PDEATHSIG).
 *
 * Built static with the Landlock helper (scripts/build-native.mjs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef MNT_DETACH
#define MNT_DETACH 2
#endif

/* A field's most bytes: a path (PATH_MAX) is the longest a request carries. */
#define FIELD_MAX PATH_MAX

static char fields[3][FIELD_MAX + 1];

static void reply(const char *text) {
  size_t length = strlen(text), done = 0;
  while (done < length) {
    ssize_t n = write(STDOUT_FILENO, text + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0); /* the host is gone */
    done += (size_t)n;
  }
}

static void failed(const char *step) {
  char line[256];
  snprintf(line, sizeof line, "error %s: %s\n", step, strerror(errno));
  reply(line);
}

/* Reads one NUL-ended field into fields[at]: 1, or -1 when it is empty, too long or cut off by the end of input. */
static int field(int at) {
  size_t length = 0;
  for (;;) {
    int c = getchar();
    if (c == EOF) return -1;
    if (c == 0) break;
    if (length == FIELD_MAX) return -1;
    fields[at][length++] = (char)c;
  }
  fields[at][length] = 0;
  return length == 0 ? -1 : 1;
}

/* Private, then shared: a peer group of its own. Detaches `dir` again when that fails (errno kept). */
static int share(const char *dir) {
  const char *step = "make-private";
  if (mount(NULL, dir, NULL, MS_PRIVATE, NULL) == 0) {
    step = "make-shared";
    if (mount(NULL, dir, NULL, MS_SHARED, NULL) == 0) return 0;
  }
  int saved = errno;
  (void)umount2(dir, MNT_DETACH);
  errno = saved;
  failed(step);
  return -1;
}

int main(void) {
  /* A host that dies before closing stdin (killed) takes the helper with it; its closed stdin would end it too. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return 3;
  for (;;) {
    int verb = getchar();
    if (verb == EOF) return 0;
    int count = verb == 't' ? 3 : verb == 'b' ? 2 : verb == 's' || verb == 'u' || verb == 'r' || verb == 'w' ? 1 : -1;
    if (count < 0) return 2;
    for (int at = 0; at < count; at++) {
      if (field(at) != 1) return 2;
    }
    switch (verb) {
      case 't':
        if (mount("ears-bounded", fields[0], "tmpfs", MS_NOSUID | MS_NODEV, fields[1]) != 0) {
          failed("mount");
          continue;
        }
        if (strcmp(fields[2], "1") == 0 && share(fields[0]) != 0) continue;
        break;
      case 's':
        if (mount(fields[0], fields[0], NULL, MS_BIND, NULL) != 0) {
          failed("mount --bind");
          continue;
        }
        if (share(fields[0]) != 0) continue;
        break;
      case 'b':
        if (mount(fields[0], fields[1], NULL, MS_BIND, NULL) != 0) {
          failed("mount --bind");
          continue;
        }
        break;
      case 'u':
        if (umount2(fields[0], MNT_DETACH) != 0) {
          failed("umount -l");
          continue;
        }
        break;
      case 'r':
      case 'w':
        /* A remount without MS_BIND reconfigures the superblock (no options: the tmpfs keeps its size and
           inodes); the mount's own flags are set anew, so the tmpfs's nosuid and nodev are given again. */
        if (mount(NULL, fields[0], NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV | (verb == 'r' ? MS_RDONLY : 0), NULL) != 0) {
          failed(verb == 'r' ? "mount -o remount,ro" : "mount -o remount,rw");
          continue;
        }
        break;
    }
    reply("ok\n");
  }
}
