/** Name and version sent in the hello frame (informational). Kept in step with package.json by a test. */
export const SDK = "@posoco/ears@0.1.0";
