/** A log frame line of exactly `bytes` UTF-8 bytes (at least 27), for tests at the frame size cap. */
export function logLineOfBytes(bytes: number): string {
  const line = `{"type":"log","content":"${"x".repeat(bytes - 27)}"}`;
  if (Buffer.byteLength(line) !== bytes) throw new RangeError(`cannot make a ${bytes}-byte log line`);
  return line;
}
