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

// object lists the members of m's value, which must be an object; what
// names the value in the error.
func object(doc []byte, m member, what string) ([]member, error) {
	if doc[m.Start] != '{' {
		return nil, fmt.Errorf("style: %s is not an object: %w", what, ErrStyle)
	}
	return members(doc[:m.End], m.Start)
}

// array lists the elements of m's value, which must be an array.
func array(doc []byte, m member, what string) ([]member, error) {
	if doc[m.Start] != '[' {
		return nil, fmt.Errorf("style: %s is not an array: %w", what, ErrStyle)
	}
	return elements(doc[:m.End], m.Start)
}

func styleErr(ms []member, err error) ([]member, error) {
	if err != nil {
		return nil, fmt.Errorf("style: %w: %w", err, ErrStyle)
	}
	return ms, nil
}
