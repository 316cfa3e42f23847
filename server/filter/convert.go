package filter

import (
	"errors"
	"math"
	"strconv"
	"unsafe"
)

// parseJavaInt is Integer.valueOf (is32) or Long.valueOf of a property
// value: an optional sign and decimal digits, in range.
func parseJavaInt(s []byte, is32 bool) (int64, bool) {
	i := 0
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if is32 {
		limit = math.MaxInt32
	}
	if neg {
		limit++
	}
	var n uint64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (limit-uint64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		return -int64(n), true // n ≤ 2^63: wraps to MinInt64 exactly there
	}
	return int64(n), true
}

// parseJavaDouble is Double.valueOf of a property value: surrounding
// control characters and spaces trimmed, an optional sign, "NaN",
// "Infinity", or a decimal (digits with an optional point and exponent, at
// least one digit) or hexadecimal ("0x1.8p3") number with an optional
// f, F, d or D suffix.
func parseJavaDouble(s []byte) (float64, bool) {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	body := s
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch string(body) { // no allocation for a comparison
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(body); n > 0 {
		switch body[n-1] {
		case 'f', 'F', 'd', 'D':
			body = body[:n-1]
			s = s[:len(s)-1]
		}
	}
	if !javaNumberSyntax(body) {
		return 0, false
	}
	// strconv keeps no reference to its input, so a view of s will do.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(s), len(s)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// javaNumberSyntax checks the unsigned part of a Java floating-point
// string, so that strconv's extras (underscores, "inf") are refused.
func javaNumberSyntax(b []byte) bool {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		return hexSyntax(b[2:])
	}
	i, digits := 0, 0
	for i < len(b) && isDigit(b[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && isDigit(b[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(b)
}

// hexSyntax checks hex digits, an optional point, and the binary exponent
// Java requires ("p" [+-] digits).
func hexSyntax(b []byte) bool {
	isHex := func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	i, digits := 0, 0
	for i < len(b) && isHex(b[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && isHex(b[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 || i >= len(b) || b[i] != 'p' && b[i] != 'P' {
		return false
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	start := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i > start && i == len(b)
}
