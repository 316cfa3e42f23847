package fastjson

import (
	"math"
	"strconv"
)

// AppendJavaDouble appends v as Java's Double.toString writes it for the
// values RocketMQ reports (rates, ratios): "0.0", "12.5", "0.333...";
// NaN and infinities as Java names them.
func AppendJavaDouble(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}
