package fastjson

// RawKey writes raw, a JSON value the caller has written (with another
// Writer), as the key of the next member of an object. fastjson writes
// the keys of a map whose keys are beans this way, as objects:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}
//
// which is not JSON; RocketMQ's clients read it (ResetOffsetBody,
// ConsumeStats, TopicStatsTable).
func (w *Writer) RawKey(raw []byte) {
	f := w.top(kindObject)
	if f.n > 0 {
		w.buf = append(w.buf, ',')
	}
	if w.pretty {
		w.newLine(w.level())
	}
	w.buf = append(w.buf, raw...)
	w.buf = append(w.buf, ':')
	f.key = true
}

// Float writes a number value the way Java writes a double: with a
// fraction always ("0.0", "12.5").
func (w *Writer) Float(v float64) {
	w.value()
	w.buf = AppendJavaDouble(w.buf, v)
}
