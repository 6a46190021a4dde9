package hostid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIDDependsOnEachPart(t *testing.T) {
	base := Of("node1", "boot", "pid:[1]")
	assert.Equal(t, base, Of("node1", "boot", "pid:[1]"))
	assert.NotEqual(t, base, Of("node2", "boot", "pid:[1]"), "host name")
	assert.NotEqual(t, base, Of("node1", "boot2", "pid:[1]"), "boot")
	assert.NotEqual(t, base, Of("node1", "boot", "pid:[2]"), "PID namespace")
	// Parts do not run into each other.
	assert.NotEqual(t, Of("ab", "c", ""), Of("a", "bc", ""))
}

func TestIDOfThisProcessIsStable(t *testing.T) {
	assert.Equal(t, ID(), ID())
	assert.NotEmpty(t, pidNamespace(), "Linux names the PID namespace in /proc/self/ns/pid")
}

// A group (--acp-host-group) splits a host: each group is a host of its
// own, the empty group the host itself.
func TestGroupsSplitAHost(t *testing.T) {
	assert.Equal(t, ID(), InGroup(""))
	assert.Equal(t, InGroup("a"), InGroup("a"))
	assert.NotEqual(t, ID(), InGroup("a"))
	assert.NotEqual(t, InGroup("a"), InGroup("b"))
}
