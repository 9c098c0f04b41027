/**
 * A real terminal for tests: a tmux pane of a given size on a tmux server of its own (a unique socket, so
 * worktrees running tests at once never share one), running one command. The test reads the screen as a
 * person sees it (`capture-pane`), with attributes when asked (`-e`), and types into it (`send-keys`).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";

/** Whether tmux can be run here (scripts/system-packages.mjs installs it). */
export const HAS_TMUX = spawnSync("tmux", ["-V"], { stdio: "ignore" }).status === 0;

/** Where the pane's cursor is and what the pane's state is. */
export interface PaneState {
  cursorX: number;
  cursorY: number;
  cursorVisible: boolean;
  alternateScreen: boolean;
  title: string;
}

export class TmuxPane {
  private readonly socket = `ears-test-${process.pid}-${randomBytes(6).toString("hex")}`;

  /**
   * Starts `command` (argv) in a `columns` x `rows` pane in `cwd`. When it ends, the pane shows
   * `[exit N]` and stays, so its last screen can still be read.
   */
  constructor(command: readonly string[], options: { cwd: string; columns?: number; rows?: number }) {
    const quoted = command.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(" ");
    this.tmux(
      "new-session",
      "-d",
      "-s",
      "t",
      "-x",
      String(options.columns ?? 80),
      "-y",
      String(options.rows ?? 30),
      "-c",
      options.cwd,
      "--",
      "sh",
      "-c",
      `${quoted}; printf '[exit %s]' "$?"; exec sleep 3600`,
    );
  }

  /** The visible screen as text, one row a line (trailing spaces trimmed by tmux). */
  screen(): string {
    return this.tmux("capture-pane", "-p", "-t", "t");
  }

  /** The visible screen with its attributes as SGR sequences (tmux writes one where the attributes change). */
  screenWithAttributes(): string {
    return this.tmux("capture-pane", "-p", "-e", "-t", "t");
  }

  state(): PaneState {
    const [x, y, visible, alternate, ...title] = this.tmux(
      "display-message",
      "-p",
      "-t",
      "t",
      "#{cursor_x}\t#{cursor_y}\t#{cursor_flag}\t#{alternate_on}\t#{pane_title}",
    )
      .replace(/\n$/, "")
      .split("\t");
    return {
      cursorX: Number(x),
      cursorY: Number(y),
      cursorVisible: visible === "1",
      alternateScreen: alternate === "1",
      title: title.join("\t"),
    };
  }

  /** Types `text` literally, then Enter. */
  type(text: string): void {
    if (text !== "") this.tmux("send-keys", "-t", "t", "-l", text);
    this.tmux("send-keys", "-t", "t", "Enter");
  }

  /**
   * Waits until `done(screen)` holds, reading the screen again each 50 ms; fails after `limitMs` with the
   * last screen (the limit is a hang guard, not a timing assertion).
   */
  async waitFor(what: string, done: (screen: string) => boolean, limitMs = 60_000): Promise<string> {
    const until = Date.now() + limitMs;
    for (;;) {
      const screen = this.screen();
      if (done(screen)) return screen;
      if (Date.now() > until) throw new Error(`the pane never showed ${what}; its screen:\n${screen}`);
      await new Promise((wake) => setTimeout(wake, 50));
    }
  }

  /** Ends the tmux server and everything in its pane. */
  kill(): void {
    spawnSync("tmux", ["-L", this.socket, "kill-server"], { stdio: "ignore" });
  }

  private tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  }
}

/** The screen's rows without the empty ones at the bottom. */
export function rowsOf(screen: string): string[] {
  const rows = screen.replace(/\n$/, "").split("\n");
  while (rows.length > 0 && rows.at(-1)!.trim() === "") rows.pop();
  return rows;
}

/**
 * For each row of a `capture-pane -e` screen, whether any character on it is drawn with a colour or a style
 * (tmux writes an SGR only where the attributes change, so the state is carried from the rows above).
 */
export function styledRows(screen: string): boolean[] {
  let foreground = false;
  let background = false;
  let style = false;
  return screen
    .replace(/\n$/, "")
    .split("\n")
    .map((row) => {
      let styled = false;
      for (const part of row.split(/(\x1b\[[0-9;:]*m)/)) {
        if (part.startsWith("\x1b[")) {
          const list = part.slice(2, -1).split(/[;:]/);
          for (let i = 0; i < list.length; i++) {
            const value = list[i] === "" ? 0 : Number(list[i]);
            if (value === 0) foreground = background = style = false;
            else if (value === 39) foreground = false;
            else if (value === 49) background = false;
            else if (value >= 22 && value <= 29) style = false;
            else if (value === 38 || value === 48) {
              if (value === 38) foreground = true;
              else background = true;
              i += list[i + 1] === "5" ? 2 : 4;
            } else if ((value >= 30 && value <= 37) || (value >= 90 && value <= 97)) foreground = true;
            else if ((value >= 40 && value <= 47) || (value >= 100 && value <= 107)) background = true;
            else style = true;
          }
        } else if (part.trim() !== "" && (foreground || background || style)) {
          styled = true;
        }
      }
      return styled;
    });
}
