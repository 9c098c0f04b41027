/**
 * `ears`'s stderr when it is a terminal: everything written to it passes straight through, except while an
 * approval question is open. Then the question is the only thing drawn, and everything else written meanwhile
 * (the guest's stderr and logs, an upstream server's stderr, any note) is held and written after the
 * answer, in the order it was written. So nothing a body prints can come after the question: the
 * question is always the last thing on the screen, where the answer is typed.
 */
import { Writable } from "node:stream";

/**
 * The most characters held while one question is open. A body that writes more while nobody answers
 * loses the rest from the terminal (the `--record` transcript and the report's stderr tail still get
 * it), and a note after the answer says how much was not shown.
 */
export const MAX_HELD_CHARS = 4 * 1024 * 1024;

/** The writer of one open question: its own text goes to the terminal at once; `release` ends the hold. */
export interface OpenQuestion {
  write(text: string): void;
  /** Writes what was held, in order; returns how many characters were not shown (beyond {@link MAX_HELD_CHARS}). */
  release(): { dropped: number; lineOpen: boolean };
}

/** A stream in front of a terminal that can hold what is written to it while a question is open. */
export class HeldTerminal extends Writable {
  readonly isTTY = true;
  private held: (string | Uint8Array)[] | undefined;
  private heldChars = 0;
  private dropped = 0;
  private lineOpen = false;

  constructor(private readonly terminal: Writable) {
    super({ decodeStrings: false });
  }

  /** The terminal's width, as the stream in front of it reports it. */
  get columns(): number | undefined {
    return (this.terminal as { columns?: number }).columns;
  }

  override _write(chunk: string | Uint8Array, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.held === undefined) this.forward(chunk);
    else if (this.heldChars + chunk.length <= MAX_HELD_CHARS) {
      this.held.push(chunk);
      this.heldChars += chunk.length;
    } else {
      this.dropped += chunk.length;
    }
    callback();
  }

  /** Holds everything written from now on until the question's `release`. One question at a time. */
  hold(): OpenQuestion {
    if (this.held !== undefined) throw new Error("a question is already open on this terminal");
    const held: (string | Uint8Array)[] = [];
    this.held = held;
    return {
      write: (text) => this.forward(text),
      release: () => {
        if (this.held !== held) return { dropped: 0, lineOpen: this.lineOpen };
        this.held = undefined;
        for (const chunk of held) this.forward(chunk);
        const dropped = this.dropped;
        this.heldChars = 0;
        this.dropped = 0;
        return { dropped, lineOpen: this.lineOpen };
      },
    };
  }

  private forward(chunk: string | Uint8Array): void {
    if (chunk.length === 0) return;
    this.terminal.write(chunk);
    this.lineOpen = chunk[chunk.length - 1] !== (typeof chunk === "string" ? "\n" : 0x0a);
  }
}

/** `stderr` behind a {@link HeldTerminal} when it is a terminal; as it is otherwise. */
export function holdableTerminal<Stream extends Writable>(stderr: Stream): Stream | HeldTerminal {
  if ((stderr as { isTTY?: boolean }).isTTY !== true || stderr instanceof HeldTerminal) return stderr;
  return new HeldTerminal(stderr);
}

/** Opens a question on `stderr`: held when it is a {@link HeldTerminal}, written straight through otherwise. */
export function openQuestion(stderr: Writable): OpenQuestion {
  if (stderr instanceof HeldTerminal) return stderr.hold();
  return { write: (text) => stderr.write(text), release: () => ({ dropped: 0, lineOpen: false }) };
}
