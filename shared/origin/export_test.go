package origin

import "net"

// SetListPageSize makes List ask for n keys per page, so pagination is
// exercised without thousands of objects.
func SetListPageSize(c *Client, n int32) { c.listPageSize = n }

// WrapConns makes New's clients pass every connection they dial through
// wrap, until restore is called.
func WrapConns(wrap func(net.Conn) net.Conn) (restore func()) {
	wrapConn = wrap
	return func() { wrapConn = nil }
}
