// Types of sshd.mjs, for the TypeScript tests that use it (test/helpers/sshd.ts).
export declare const sshdPath: string | undefined;

export interface SshOptions {
  port?: number;
  /** The client's known_hosts file (default one that knows the server's host key). */
  knownHosts?: string;
  /** More ssh options, before -T. */
  extra?: readonly string[];
}

export interface SshServer {
  ports: number[];
  dir: string;
  pid: number;
  ssh(options?: SshOptions): string[];
  stop(): Promise<void>;
}

export declare function startSshd(count?: number): Promise<SshServer>;
