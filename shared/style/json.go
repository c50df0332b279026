package style

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/internal/jsonspan"
)

// member is one member of an object, or one element of an array (Key ""),
// with its value's byte span in the whole document.
type member = jsonspan.Span

// members lists the members of the object at doc[start:], which ends at
// len(doc).
func members(doc []byte, start int) ([]member, error) {
	return styleErr(jsonspan.Members(doc, start))
}

// elements lists the elements of the array at doc[start:].
func elements(doc []byte, start int) ([]member, error) {
	return styleErr(jsonspan.Elements(doc, start))
}

func styleErr(ms []member, err error) ([]member, error) {
	if err != nil {
		return nil, fmt.Errorf("style: %w: %w", err, ErrStyle)
	}
	return ms, nil
}
