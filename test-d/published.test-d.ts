// The published declarations, as a consumer sees them (skipLibCheck is off in test-d/tsconfig.json, so
// every declaration file an entry point reaches is checked): internals are not in them.
import { expectTypeOf } from "vitest";
import { Ears, MemoryWire, createLinkedPair, type Wire } from "@posoco/ears";
import type { RunReport } from "@posoco/ears/host";
import * as host from "@posoco/ears/host";
import * as testing from "@posoco/ears/testing";
import * as openseek from "@posoco/ears/openseek";
import * as schemas from "@posoco/ears/schemas";

declare const wire: Wire;
// @ts-expect-error: only serve makes a handle; the constructor is private
new Ears(wire, []);
// @ts-expect-error: nor with no arguments
new Ears();
declare const ears: Ears;
// @ts-expect-error: finish() is internal (stripped from the published types)
ears.finish();
// @ts-expect-error: Ears.open is internal
Ears.open(wire, []);
// @ts-expect-error: MemoryWire.link is internal; pairs come from createLinkedPair
MemoryWire.link(...createLinkedPair());

// @ts-expect-error: the engine's internals are not exported
void host.hostSession;
expectTypeOf(host.runGuest).returns.toEqualTypeOf<Promise<RunReport>>();
void testing.testGuest;
void openseek;
void schemas;

// The core's transport error kinds are the protocol's; OpenSeek adds its own to the same class (issue 11).
{
  type CoreKind = import("@posoco/ears").TransportErrorKind;
  expectTypeOf<"closed">().toExtend<CoreKind>();
  expectTypeOf<"http">().not.toExtend<CoreKind>();
  expectTypeOf<"handoff">().not.toExtend<CoreKind>();
  expectTypeOf<"http" | "handoff" | CoreKind>().toEqualTypeOf<openseek.TransportErrorKind>();
  expectTypeOf(openseek.TransportError).toEqualTypeOf<typeof import("@posoco/ears").TransportError>();
  const error: unknown = undefined;
  // instanceof narrows to every kind, so a catch can test OpenSeek's kinds on the one class.
  if (error instanceof openseek.TransportError && error.kind === "http") expectTypeOf(error.mayHaveExecuted).toEqualTypeOf<boolean>();
  // @ts-expect-error: the protocol layer's constructor takes only the protocol's kinds
  new openseek.TransportError("x", { kind: "http" });
}
