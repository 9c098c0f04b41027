// Cold-start guest: imports the package and serves; its first line is the hello frame.
import { serve, stdio } from "@posoco/ears";

await serve({ wire: stdio(), run: () => undefined });
