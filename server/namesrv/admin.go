package namesrv

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// liveConfig is the part of the name server's config that
// UPDATE_NAMESRV_CONFIG changes while it runs.
type liveConfig struct {
	orderMessageEnable atomic.Bool
	enableAllTopicList atomic.Bool
}

func newLiveConfig(o Options) *liveConfig {
	c := &liveConfig{}
	c.orderMessageEnable.Store(o.OrderMessageEnable)
	c.enableAllTopicList.Store(!o.DisableAllTopicList)
	return c
}

// registerAdmin wires the config and topic-list admin codes.
func (s *Server) registerAdmin() {
	for code, f := range map[int]func(context.Context, *remoting.Request) *remoting.Command{
		remoting.GetNamesrvConfig:             s.getConfig,
		remoting.UpdateNamesrvConfig:          s.updateConfig,
		remoting.GetSystemTopicListFromNs:     s.getSystemTopicList,
		remoting.GetUnitTopicList:             s.unitTopics(func(f int) bool { return f&topicSysFlagUnit != 0 }),
		remoting.GetHasUnitSubTopicList:       s.unitTopics(func(f int) bool { return f&topicSysFlagUnitSub != 0 }),
		remoting.GetHasUnitSubUnunitTopicList: s.unitTopics(func(f int) bool { return f&topicSysFlagUnit == 0 && f&topicSysFlagUnitSub != 0 }),
	} {
		s.rs.RegisterFunc(code, f)
	}
}

// config returns the name server's settings under NamesrvConfig's and
// NettyServerConfig's keys.
func (s *Server) config() map[string]string {
	m := map[string]string{
		"orderMessageEnable":          strconv.FormatBool(s.cfg.orderMessageEnable.Load()),
		"enableAllTopicList":          strconv.FormatBool(s.cfg.enableAllTopicList.Load()),
		"enableTopicList":             "true",
		"scanNotActiveBrokerInterval": strconv.FormatInt(s.opts.ScanInterval.Milliseconds(), 10),
		"defaultBrokerTimeoutMillis":  strconv.FormatInt(s.opts.BrokerTimeout.Milliseconds(), 10),
		"serverSocketMaxFrameSize":    strconv.Itoa(cmp.Or(s.opts.Remoting.MaxFrameSize, remoting.DefaultMaxFrameSize)),
	}
	if a, ok := s.rs.Addr().(*net.TCPAddr); ok {
		m["listenPort"] = strconv.Itoa(a.Port)
	}
	return m
}

// getConfig handles GET_NAMESRV_CONFIG (319): the config as properties
// text, key=value lines (getAllConfigsFormatString).
func (s *Server) getConfig(context.Context, *remoting.Request) *remoting.Command {
	m := s.config()
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, m[k])
	}
	resp := success()
	resp.Body = []byte(sb.String())
	return resp
}

// updateConfig handles UPDATE_NAMESRV_CONFIG (318): a properties body.
// orderMessageEnable and enableAllTopicList apply at once; other keys are
// refused with INVALID_PARAMETER and nothing changes.
func (s *Server) updateConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	kv := map[string]bool{}
	for n, line := range strings.Split(string(req.Body), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("string2Properties error: line %d %q is not key=value", n+1, line))
		}
		k, v := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		b, err := strconv.ParseBool(v)
		switch {
		case k != "orderMessageEnable" && k != "enableAllTopicList":
			if _, known := s.config()[k]; known {
				return remoting.NewResponse(remoting.InvalidParameter, k+" cannot change while the name server runs")
			}
			return remoting.NewResponse(remoting.InvalidParameter, "unknown name server config key "+k)
		case err != nil:
			return remoting.NewResponse(remoting.InvalidParameter, fmt.Sprintf("%s=%q is not true or false", k, v))
		}
		kv[k] = b
	}
	for k, v := range kv {
		if k == "orderMessageEnable" {
			s.cfg.orderMessageEnable.Store(v)
		} else {
			s.cfg.enableAllTopicList.Store(v)
		}
		s.log.Info("name server config updated", "key", k, "value", v)
	}
	return success()
}

// getSystemTopicList handles GET_SYSTEM_TOPIC_LIST_FROM_NS (304).
func (s *Server) getSystemTopicList(context.Context, *remoting.Request) *remoting.Command {
	topics, addr := s.routes.SystemTopics()
	resp := success()
	resp.Body = (&protocol.TopicList{TopicList: nonNil(topics), BrokerAddr: addr}).AppendJSON(nil)
	return resp
}

func (s *Server) unitTopics(keep func(int) bool) func(context.Context, *remoting.Request) *remoting.Command {
	return func(context.Context, *remoting.Request) *remoting.Command {
		resp := success()
		resp.Body = (&protocol.TopicList{TopicList: nonNil(s.routes.TopicsBySysFlag(keep))}).AppendJSON(nil)
		return resp
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
