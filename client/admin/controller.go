package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// ControllerMetadata is a controller's CONTROLLER_GET_METADATA_INFO answer.
type ControllerMetadata struct {
	Group         string `json:"group"`
	LeaderID      string `json:"controllerLeaderId"`
	LeaderAddress string `json:"controllerLeaderAddress"`
	IsLeader      bool   `json:"isLeader"`
	// Peers is "id:addr;…".
	Peers string `json:"peers"`
}

// controller calls a controller.
func (c *Client) controller(ctx context.Context, addr string, code int, ext map[string]string, body []byte) (*remoting.Command, error) {
	return c.call(ctx, "controller", addr, remoting.NewRequest(code, ext, body))
}

// ControllerMetadata asks one controller for the group, its leader and
// peers (CONTROLLER_GET_METADATA_INFO).
func (c *Client) ControllerMetadata(ctx context.Context, addr string) (*ControllerMetadata, error) {
	resp, err := c.controller(ctx, addr, protocol.ControllerGetMetadataInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	leader, _ := strconv.ParseBool(resp.Ext("isLeader"))
	return &ControllerMetadata{Group: resp.Ext("group"), LeaderID: resp.Ext("controllerLeaderId"),
		LeaderAddress: resp.Ext("controllerLeaderAddress"), IsLeader: leader, Peers: resp.Ext("peers")}, nil
}

// ControllerLeader returns the leader's address as the first controller
// of addrs that answers knows it.
func (c *Client) ControllerLeader(ctx context.Context, addrs []string) (string, error) {
	var errs []error
	for _, a := range addrs {
		md, err := c.ControllerMetadata(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if md.LeaderAddress != "" {
			return md.LeaderAddress, nil
		}
		errs = append(errs, fmt.Errorf("controller %s knows no leader", a))
	}
	if len(errs) == 0 {
		return "", errors.New("no controller address given: use -a host:port")
	}
	return "", errors.Join(errs...)
}

// SyncStateData returns the replicas of broker groups as the controller
// leader at addr has them (CONTROLLER_GET_SYNC_STATE_DATA).
func (c *Client) SyncStateData(ctx context.Context, addr string, brokerNames []string) (*protocol.BrokerReplicasInfo, error) {
	body, _ := json.Marshal(brokerNames)
	resp, err := c.controller(ctx, addr, protocol.ControllerGetSyncStateData, nil, body)
	if err != nil {
		return nil, err
	}
	var out protocol.BrokerReplicasInfo
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("sync state data from %s: %w", addr, err)
	}
	return &out, nil
}

// ElectMasterResult is CONTROLLER_ELECT_MASTER's answer.
type ElectMasterResult struct {
	MasterBrokerID    int64   `json:"masterBrokerId"`
	MasterAddress     string  `json:"masterAddress"`
	MasterEpoch       int32   `json:"masterEpoch"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet"`
}

// ElectMaster asks the controller leader to make brokerID the master of
// its group (designateElect, as mqadmin electMaster).
func (c *Client) ElectMaster(ctx context.Context, addr, cluster, brokerName string, brokerID int64) (*ElectMasterResult, error) {
	resp, err := c.controller(ctx, addr, protocol.ControllerElectMaster, map[string]string{
		"clusterName": cluster, "brokerName": brokerName, "brokerId": strconv.FormatInt(brokerID, 10), "designateElect": "true",
	}, nil)
	if err != nil {
		return nil, err
	}
	r := &ElectMasterResult{MasterAddress: resp.Ext("masterAddress")}
	r.MasterBrokerID, _ = strconv.ParseInt(resp.Ext("masterBrokerId"), 10, 64)
	me, _ := strconv.ParseInt(resp.Ext("masterEpoch"), 10, 32)
	se, _ := strconv.ParseInt(resp.Ext("syncStateSetEpoch"), 10, 32)
	r.MasterEpoch, r.SyncStateSetEpoch = int32(me), int32(se)
	var body protocol.ElectMasterResponseBody
	if json.Unmarshal(resp.Body, &body) == nil {
		r.SyncStateSet = body.SyncStateSet
	}
	return r, nil
}

// ControllerConfig returns a controller's configuration
// (GET_CONTROLLER_CONFIG).
func (c *Client) ControllerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.controller(ctx, addr, protocol.GetControllerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return parseProperties(string(resp.Body)), nil
}

// UpdateControllerConfig changes a controller's configuration
// (UPDATE_CONTROLLER_CONFIG; each controller is told separately).
func (c *Client) UpdateControllerConfig(ctx context.Context, addr string, props map[string]string) error {
	_, err := c.controller(ctx, addr, protocol.UpdateControllerConfig, nil, formatProperties(props))
	return err
}

// CleanBrokerData removes broker ids (ids "1;2", empty: the whole group)
// from the controller's metadata (CLEAN_BROKER_DATA); living brokers only
// with cleanLiving.
func (c *Client) CleanBrokerData(ctx context.Context, addr, cluster, brokerName, ids string, cleanLiving bool) error {
	_, err := c.controller(ctx, addr, protocol.CleanBrokerData, map[string]string{
		"clusterName": cluster, "brokerName": brokerName, "brokerControllerIdsToClean": ids,
		"isCleanLivingBroker": strconv.FormatBool(cleanLiving),
	}, nil)
	return err
}
