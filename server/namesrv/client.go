package namesrv

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// ErrTopicNotExist: the name server has no route for the topic
// (TOPIC_NOT_EXIST).
var ErrTopicNotExist = errors.New("namesrv: topic does not exist")

// ResponseError is a name server's answer with a code other than SUCCESS.
type ResponseError struct {
	Code   int
	Remark string
}

// Error says the code and remark.
func (e *ResponseError) Error() string {
	return fmt.Sprintf("namesrv: answer code %d: %s", e.Code, e.Remark)
}

// RegisterRequest returns the REGISTER_BROKER request for r, as a Java
// broker sends it: plain JSON body, or with r.Compressed the deflated
// form of compressedRegister, its CRC32 in the header.
func RegisterRequest(r *BrokerRegistration) *remoting.Command {
	rb := &protocol.RegisterBrokerBody{
		FilterServerList:            r.FilterServerList,
		TopicConfigSerializeWrapper: r.Topics,
	}
	var body []byte
	if r.Compressed {
		body = EncodeRegisterBrokerBodyCompressed(rb)
	} else {
		body = EncodeRegisterBrokerBody(rb)
	}
	ext := map[string]string{
		"brokerName":   r.BrokerName,
		"brokerAddr":   r.BrokerAddr,
		"clusterName":  r.ClusterName,
		"haServerAddr": r.HAServerAddr,
		"brokerId":     strconv.FormatInt(r.BrokerID, 10),
		"compressed":   strconv.FormatBool(r.Compressed),
		"bodyCrc32":    strconv.FormatInt(int64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10),
	}
	if r.HeartbeatTimeout > 0 {
		ext["heartbeatTimeoutMillis"] = strconv.FormatInt(r.HeartbeatTimeout.Milliseconds(), 10)
	}
	if r.EnableActingMaster != nil {
		ext["enableActingMaster"] = strconv.FormatBool(*r.EnableActingMaster)
	}
	if r.ZoneName != "" {
		ext["zoneName"] = r.ZoneName
	}
	return remoting.NewRequest(remoting.RegisterBroker, ext, body)
}

// Register sends REGISTER_BROKER to the name server at addr. A broker
// calls it at start and every 30 s for every name server.
func Register(ctx context.Context, c *remoting.Client, addr string, r *BrokerRegistration) (RegisterResult, error) {
	resp, err := c.Invoke(ctx, addr, RegisterRequest(r))
	if err != nil {
		return RegisterResult{}, err
	}
	if resp.Code != remoting.Success {
		return RegisterResult{}, &ResponseError{resp.Code, resp.Remark}
	}
	return RegisterResult{HAServerAddr: resp.Ext("haServerAddr"), MasterAddr: resp.Ext("masterAddr")}, nil
}

// Unregister sends UNREGISTER_BROKER to the name server at addr; a broker
// calls it when it shuts down.
func Unregister(ctx context.Context, c *remoting.Client, addr, cluster, brokerName, brokerAddr string, brokerID int64) error {
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
		"brokerName":  brokerName,
		"brokerAddr":  brokerAddr,
		"clusterName": cluster,
		"brokerId":    strconv.FormatInt(brokerID, 10),
	}, nil))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &ResponseError{resp.Code, resp.Remark}
	}
	return nil
}

// GetRoute asks the name server at addr for a topic's route. An unknown
// topic gives an error wrapping ErrTopicNotExist.
func GetRoute(ctx context.Context, c *remoting.Client, addr, topic string) (*protocol.TopicRouteData, error) {
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, err
	}
	switch resp.Code {
	case remoting.Success:
		return protocol.DecodeTopicRouteData(resp.Body)
	case remoting.TopicNotExist:
		return nil, fmt.Errorf("%w: %s: %s", ErrTopicNotExist, topic, resp.Remark)
	}
	return nil, &ResponseError{resp.Code, resp.Remark}
}
