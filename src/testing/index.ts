/**
 * @posoco/ears/testing: run guests in-process against scripted capabilities, record and replay
 * transcripts, fast-check arbitraries for frames and sessions, and OpenSeek host doubles.
 */
export { testGuest, type ContractFor, type GuestTestOptions, type GuestTestReport, type GuestTestDetails } from "./test-guest.js";
export {
  recordTo,
  recordToStream,
  readTranscript,
  formatTranscriptEntry,
  transcriptLine,
  transcriptEntry,
  isNote,
  MAX_RECORDED_CODE_CHARS,
  TranscriptError,
  type Direction,
  type EntryToWrite,
  type FrameEntry,
  type Recorder,
  type ReadTranscriptOptions,
  type TranscriptEntry,
  type TranscriptNote,
  type RecordOptions,
} from "../transcripts/transcript.js";
export { replay, type ReplayProgram, type ReplayTarget } from "./replay.js";
export { recordingOf, RecordingError, type Recording, type RecordedExchange } from "../transcripts/recording.js";
export {
  replayHost,
  REPLAY_DIVERGED,
  type ReplayOptions,
  type ReplayReport,
  type ReplayMatched,
  type ReplayDiverged,
  type ReplayDetails,
} from "../transcripts/replay.js";
export * from "./arbitraries.js";
export * from "./openseek-doubles.js";
