// Logging setup shared by stofc and stof-run: one knob, -v on the command
// line or STOF_LOG=trace|debug|info|warn|error|off in the environment.
#pragma once

namespace stof {

// verbosity: 0 = info (default), 1 = debug, 2+ = trace. STOF_LOG overrides
// when set. Messages go to stderr.
void init_logging(int verbosity);

}  // namespace stof
