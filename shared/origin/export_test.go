package origin

// SetListPageSize makes List ask for n keys per page, so pagination is
// exercised without thousands of objects.
func SetListPageSize(c *Client, n int32) { c.listPageSize = n }
