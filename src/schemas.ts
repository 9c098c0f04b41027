/**
 * @posoco/ears/schemas: the zod schemas of record for protocol 1 (`protocol/schemas.ts`). An entry of its
 * own so the guest runtime never loads zod.
 */
export * from "./protocol/schemas.js";
