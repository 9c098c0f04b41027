/**
 * The run-scoped capability an OpenSeek host hands a script in an environment variable:
 * `{"version":1,"url":"http://127.0.0.1:<port>/call","token":"...","approval_tools"?:[...]}`.
 * It is read at call time, so a script may set or change it after importing the SDK.
 */
import { openSeekTransportError } from "./transport-error.js";

/** A validated capability: where to send requests and with which token. */
export interface Handoff {
  url: URL;
  token: string;
  /** Tool names that may wait for a human approval, so they run without the client deadline (PTC only). */
  approvalTools: readonly string[];
  /** The variable's exact text, which identifies the run (the MCP catalog cache is keyed by it). */
  capability: string;
}

/** One OpenSeek host service and how its handoff is named in messages. */
export interface HostService {
  /** "PTC" or "MCP", used in every message. */
  label: string;
  variable: string;
  /** Message when the variable is not set. */
  absent: string;
  /** Whether the capability's `approval_tools` means anything to this service. */
  approvals: boolean;
}

/** The programmatic tool call service (`call`). */
export const PTC_SERVICE: HostService = {
  label: "PTC",
  variable: "OPENSEEK_PTC",
  absent: "No PTC host. Run the script with mbtx(ptc=true) so the host sets OPENSEEK_PTC; nothing was sent.",
  approvals: true,
};

/** The MCP bridge (`mcp.call`, `mcp.search`). */
export const MCP_SERVICE: HostService = {
  label: "MCP",
  variable: "OPENSEEK_MCP",
  absent: "No MCP host. OPENSEEK_MCP is not set (an older OpenSeek host, or no MCP server configured); nothing was sent.",
  approvals: false,
};

/**
 * Reads and checks `service`'s variable. Throws `TransportError` (kind "handoff") when it is missing
 * or invalid; nothing has been sent then.
 */
export function readHandoff(service: HostService, env: NodeJS.ProcessEnv = process.env): Handoff {
  const capability = env[service.variable];
  if (capability === undefined) throw openSeekTransportError(service.absent, { kind: "handoff" });
  const invalid = (reason: string) =>
    openSeekTransportError(`Invalid ${service.label} host handoff: ${service.variable} ${reason}; nothing was sent.`, {
      kind: "handoff",
    });
  let value: unknown;
  try {
    value = JSON.parse(capability);
  } catch {
    throw invalid("is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("is not a JSON object");
  const fields = value as Record<string, unknown>;
  if (fields["version"] !== 1) throw invalid(`has version ${JSON.stringify(fields["version"]) ?? "missing"}; this SDK speaks version 1`);
  const rawUrl = fields["url"];
  if (typeof rawUrl !== "string") throw invalid(`has no string "url"`);
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw invalid(`has a "url" that is not a URL`);
  }
  if (url.protocol !== "http:") throw invalid(`has a "url" that is not http: (${url.protocol})`);
  const token = fields["token"];
  if (typeof token !== "string") throw invalid(`has no string "token"`);
  // The token goes into a header verbatim: control characters or spaces would corrupt or split the request.
  if (!/^[\x21-\x7e]+$/.test(token)) throw invalid(`has a "token" that is empty or not printable ASCII`);
  let approvalTools: readonly string[] = [];
  if (service.approvals && fields["approval_tools"] !== undefined) {
    const names = fields["approval_tools"];
    if (!Array.isArray(names) || !names.every((name) => typeof name === "string")) {
      throw invalid(`has an "approval_tools" that is not an array of strings`);
    }
    approvalTools = names as string[];
  }
  return { url, token, approvalTools, capability };
}
