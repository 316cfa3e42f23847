package controller

// Request codes of the controller (RocketMQ's RequestCode).
const (
	CodeAlterSyncStateSet     = 1001 // CONTROLLER_ALTER_SYNC_STATE_SET
	CodeElectMaster           = 1002 // CONTROLLER_ELECT_MASTER
	CodeRegisterBroker        = 1003 // CONTROLLER_REGISTER_BROKER
	CodeGetReplicaInfo        = 1004 // CONTROLLER_GET_REPLICA_INFO
	CodeGetMetadataInfo       = 1005 // CONTROLLER_GET_METADATA_INFO
	CodeGetSyncStateData      = 1006 // CONTROLLER_GET_SYNC_STATE_DATA
	CodeGetBrokerEpochCache   = 1007 // GET_BROKER_EPOCH_CACHE
	CodeNotifyBrokerRoleChang = 1008 // NOTIFY_BROKER_ROLE_CHANGED
	CodeUpdateControllerConf  = 1009 // UPDATE_CONTROLLER_CONFIG
	CodeGetControllerConfig   = 1010 // GET_CONTROLLER_CONFIG
	CodeCleanBrokerData       = 1011 // CLEAN_BROKER_DATA
	CodeGetNextBrokerID       = 1012 // CONTROLLER_GET_NEXT_BROKER_ID
	CodeApplyBrokerID         = 1013 // CONTROLLER_APPLY_BROKER_ID
	CodeBrokerHeartbeat       = 904  // BROKER_HEARTBEAT
)

// Response codes of the controller (RocketMQ's ResponseCode).
const (
	Success                        = 0
	SystemError                    = 1
	FencedMasterEpoch              = 2000 // CONTROLLER_FENCED_MASTER_EPOCH
	FencedSyncStateSetEpoch        = 2001 // CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
	InvalidMaster                  = 2002 // CONTROLLER_INVALID_MASTER
	InvalidReplicas                = 2003 // CONTROLLER_INVALID_REPLICAS
	MasterNotAvailable             = 2004 // CONTROLLER_MASTER_NOT_AVAILABLE
	InvalidRequest                 = 2005 // CONTROLLER_INVALID_REQUEST
	BrokerNotAlive                 = 2006 // CONTROLLER_BROKER_NOT_ALIVE
	NotLeader                      = 2007 // CONTROLLER_NOT_LEADER
	BrokerMetadataNotExist         = 2008 // CONTROLLER_BROKER_METADATA_NOT_EXIST
	InvalidCleanBrokerMetadata     = 2009 // CONTROLLER_INVALID_CLEAN_BROKER_METADATA
	BrokerNeedToBeRegistered       = 2010 // CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
	MasterStillExist               = 2011 // CONTROLLER_MASTER_STILL_EXIST
	ElectMasterFailed              = 2012 // CONTROLLER_ELECT_MASTER_FAILED
	AlterSyncStateSetFailed        = 2013 // CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
	BrokerIDInvalid                = 2014 // CONTROLLER_BROKER_ID_INVALID
)

// FirstBrokerID is the first id the controller assigns in a broker group
// (MixAll.FIRST_BROKER_CONTROLLER_ID); id 0 is what a master registers as
// with the name servers, never a controller id.
const FirstBrokerID = 1
