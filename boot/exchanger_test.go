package boot

import "github.com/libacp/libacp/core"

// The engine consumes a Bootstrap as its Exchanger and asks it for the
// local IP; keep the two in step.
var (
	_ core.Exchanger = Bootstrap(nil)
	_ core.LocalIPer = Bootstrap(nil)
)
