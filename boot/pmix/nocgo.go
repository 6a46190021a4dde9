//go:build !cgo

package pmix

import "errors"

// Without cgo there is no way to call libpmix: Open says so, and the
// types exist so that callers build the same way.

var errNoCgo = errors.New("this build has no cgo, which PMIx support needs (build with CGO_ENABLED=1)")

// Library is a loaded libpmix.
type Library struct{}

// Client is this process's connection to its PMIx server.
type Client struct{}

// Open always fails without cgo.
func Open(names ...string) (*Library, error) { return nil, errNoCgo }

func (l *Library) Name() string                   { return "" }
func (l *Library) Version() string                { return "" }
func (l *Library) Init() (*Client, error)         { return nil, errNoCgo }
func (c *Client) Rank() int                       { return -1 }
func (c *Client) Namespace() string               { return "" }
func (c *Client) JobUint(string) (uint64, error)  { return 0, errNoCgo }
func (c *Client) Put(string, []byte) error        { return errNoCgo }
func (c *Client) Commit() error                   { return errNoCgo }
func (c *Client) Fence(bool) error                { return errNoCgo }
func (c *Client) Get(int, string) ([]byte, error) { return nil, errNoCgo }
func (c *Client) Abort(int, string) error         { return errNoCgo }
func (c *Client) Finalize() error                 { return errNoCgo }
