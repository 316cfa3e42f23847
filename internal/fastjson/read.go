package fastjson

import "encoding/json"

// QuoteIntKeys rewrites the bare number keys fastjson writes for maps with
// number keys ({0:"a"}) as JSON strings ({"0":"a"}), leaving everything
// else, strings included, as it is. It returns b itself when there is
// nothing to rewrite, and a new slice otherwise; b is never modified.
func QuoteIntKeys(b []byte) []byte {
	var out []byte
	copied := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			continue
		case '{', ',':
		default:
			continue
		}
		// After '{' or ',' comes a key if we are in an object.
		j := skipSpace(b, i+1)
		k := j
		if k < len(b) && b[k] == '-' {
			k++
		}
		d := k
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k == d {
			continue
		}
		if e := skipSpace(b, k); e >= len(b) || b[e] != ':' {
			continue // a number in an array
		}
		out = append(out, b[copied:j]...)
		out = append(out, '"')
		out = append(out, b[j:k]...)
		out = append(out, '"')
		copied = k
		i = k - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[copied:]...)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Unmarshal is json.Unmarshal for text fastjson wrote: bare number keys
// are read as if quoted. Standard JSON reads as json.Unmarshal reads it.
// Errors are encoding/json's.
func Unmarshal(b []byte, v any) error {
	return json.Unmarshal(QuoteIntKeys(b), v)
}
