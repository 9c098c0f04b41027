/**
 * @posoco/ears: the guest runtime. A guest calls `serve` once; through the `Ears` handle it calls host
 * capabilities by name, logs diagnostics, and returns exactly one result.
 */
export { serve, type GuestProgram, type ServeOptions, type ServeReport, type ReturnCheck } from "./guest/serve.js";
export { Ears, type CallOptions, type LogLevel } from "./guest/ears.js";
export { Outcome, FailureCode, type Success, type Failure } from "./protocol/outcome.js";
export { TransportError, TimeoutError, type TransportErrorKind, type TransportErrorOptions } from "./protocol/errors.js";
export { jsonProblem, MAX_FRAME_DEPTH, MAX_VALUE_DEPTH, type Json, type JsonProblemOptions } from "./protocol/json.js";
export type { Wire } from "./wires/wire.js";
export { stdio, streamWire, StreamWire, type StdioOptions } from "./wires/stdio.js";
export { createLinkedPair, MemoryWire } from "./wires/memory.js";
export {
  PROTOCOL,
  DEFAULT_MAX_FRAME_BYTES,
  encodeFrame,
  decodeFrame,
  validateFrame,
  FrameError,
  type Frame,
  type GuestFrame,
  type HostFrame,
  type HelloFrame,
  type InvokeFrame,
  type RequestFrame,
  type LogFrame,
  type ResultFrame,
  type ReplyFrame,
} from "./protocol/frames.js";
export { LineSplitter, LineError, type LineErrorKind } from "./wires/line-splitter.js";
export {
  defineCapabilities,
  type Contract,
  type CapabilitySpec,
  type CapabilitySpecs,
  type CapabilityDescription,
  type LooseSpecs,
  type ArgumentsOf,
  type NamesWithArguments,
  type NamesWithoutArguments,
  type JsonArgumentRest,
  type UntypedCallRest,
  type JsonSafe,
  type NotJson,
  type CallResult,
  type TypedSuccess,
  type Handler,
  type Handlers,
  type StandardSchemaV1,
  type StandardSchemaProps,
  type StandardResult,
  type StandardIssue,
  type InferInput,
  type InferOutput,
} from "./contract/contract.js";
export type { DeclarationOptions } from "./contract/declarations.js";
export { jsonSchema, type JsonSchema } from "./contract/json-schema.js";
export { composeContracts, type ComposedSpecs, type ContractPart } from "./contract/compose.js";
