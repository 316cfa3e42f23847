// Package remoting speaks Apache RocketMQ's remoting protocol: the frame
// codec, RemotingCommand (Command), a TCP Server that answers requests with
// processors registered per request code, and a Client. The broker and the
// name server are built on it; RocketMQ clients (the Go client
// github.com/apache/rocketmq-client-go/v2 in particular) talk to them
// unchanged.
//
// # Frame layout
//
// Big endian. One TCP stream carries frames both ways.
//
//	+-----------+------+------------+-------------+-----------+
//	| length    | type | headerLen  | header      | body      |
//	| int32     | u8   | u24        | headerLen B | rest      |
//	+-----------+------+------------+-------------+-----------+
//	length = 4 + headerLen + len(body): everything after the length field
//	type   = SerializeType: 0 JSON, 1 ROCKETMQ
//
// A frame is at most MaxFrameSize bytes, length field included (16 MiB by
// default, RocketMQ's com.rocketmq.remoting.frameMaxLength). A bad length,
// an unknown type, a header length past the frame or a header that does
// not parse closes the connection; other connections go on.
//
// JSON header (what the Go client sends and expects; written by default):
//
//	{"code":10,"extFields":{"topic":"T",...},"flag":0,"language":"JAVA",
//	 "opaque":7,"remark":"","version":401}
//
// It is read liberally, like fastjson in Java: any key order, unknown keys,
// ext values as strings, numbers, booleans or null. It is written with
// string ext values only: the Go client drops a frame whose ext map holds a
// bare number.
//
// ROCKETMQ header (RocketMQSerializable; read always; a request sent with it
// is answered with it, unlike a Java server, which answers in its configured
// form; Go and Java clients read both):
//
//	+------+------+---------+--------+-------+-----------+--------+--------+-------------------------+
//	| code | lang | version | opaque | flag  | remarkLen | remark | extLen | ext: {keyLen u16, key,   |
//	| i16  | u8   | i16     | i32    | i32   | i32       |        | i32    |       valLen i32, value}* |
//	+------+------+---------+--------+-------+-----------+--------+--------+-------------------------+
//
// # Commands
//
// Flag bit 0 marks a response, bit 1 a oneway request. A response carries
// its request's opaque. The Go client never sets the oneway bit, even for
// the calls it treats as oneway, and ignores answers nobody waits for.
//
// # Serving
//
// A Server reads each connection in one goroutine and runs each request's
// Processor in a goroutine of its own, so requests on one connection are
// processed concurrently, as RocketMQ does. A processor registered with
// RegisterInline runs on the reading goroutine instead, in order: no
// goroutine or wake-up per request, for quick processors that never wait.
// Frames ready to go at the same time (answers of requests read together,
// or of processors finishing together) leave in one write. A request code
// without a processor is answered REQUEST_CODE_NOT_SUPPORTED; a processor
// that panics answers SYSTEM_ERROR. A processor can answer later: it calls req.Defer,
// returns nil, and calls req.Respond from any goroutine (long polling).
// Each Conn can send requests to its peer too (Invoke, InvokeOneway,
// InvokeAsync), and OnClose listeners learn when a connection closes.
package remoting
