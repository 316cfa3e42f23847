package protocol

// Request codes of controller mode (RocketMQ's RequestCode).
const (
	ControllerAlterSyncStateSet = 1001 // CONTROLLER_ALTER_SYNC_STATE_SET
	ControllerElectMaster       = 1002 // CONTROLLER_ELECT_MASTER
	ControllerRegisterBroker    = 1003 // CONTROLLER_REGISTER_BROKER
	ControllerGetReplicaInfo    = 1004 // CONTROLLER_GET_REPLICA_INFO
	ControllerGetMetadataInfo   = 1005 // CONTROLLER_GET_METADATA_INFO
	ControllerGetSyncStateData  = 1006 // CONTROLLER_GET_SYNC_STATE_DATA
	GetBrokerEpochCache         = 1007 // GET_BROKER_EPOCH_CACHE
	NotifyBrokerRoleChanged     = 1008 // NOTIFY_BROKER_ROLE_CHANGED
	UpdateControllerConfig      = 1009 // UPDATE_CONTROLLER_CONFIG
	GetControllerConfig         = 1010 // GET_CONTROLLER_CONFIG
	CleanBrokerData             = 1011 // CLEAN_BROKER_DATA
	ControllerGetNextBrokerID   = 1012 // CONTROLLER_GET_NEXT_BROKER_ID
	ControllerApplyBrokerID     = 1013 // CONTROLLER_APPLY_BROKER_ID
)

// Response codes of controller mode (RocketMQ's ResponseCode); Success
// and SystemError are remoting's.
const (
	ControllerFencedMasterEpoch          = 2000 // CONTROLLER_FENCED_MASTER_EPOCH
	ControllerFencedSyncStateSetEpoch    = 2001 // CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
	ControllerInvalidMaster              = 2002 // CONTROLLER_INVALID_MASTER
	ControllerInvalidReplicas            = 2003 // CONTROLLER_INVALID_REPLICAS
	ControllerMasterNotAvailable         = 2004 // CONTROLLER_MASTER_NOT_AVAILABLE
	ControllerInvalidRequest             = 2005 // CONTROLLER_INVALID_REQUEST
	ControllerBrokerNotAlive             = 2006 // CONTROLLER_BROKER_NOT_ALIVE
	ControllerNotLeader                  = 2007 // CONTROLLER_NOT_LEADER
	ControllerBrokerMetadataNotExist     = 2008 // CONTROLLER_BROKER_METADATA_NOT_EXIST
	ControllerInvalidCleanBrokerMetadata = 2009 // CONTROLLER_INVALID_CLEAN_BROKER_METADATA
	ControllerBrokerNeedToBeRegistered   = 2010 // CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
	ControllerMasterStillExist           = 2011 // CONTROLLER_MASTER_STILL_EXIST
	ControllerElectMasterFailed          = 2012 // CONTROLLER_ELECT_MASTER_FAILED
	ControllerAlterSyncStateSetFailed    = 2013 // CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
	ControllerBrokerIDInvalid            = 2014 // CONTROLLER_BROKER_ID_INVALID
)

// FirstControllerBrokerID is the first id the controller assigns in a broker group
// (MixAll.FIRST_BROKER_CONTROLLER_ID); id 0 is what a master registers as
// with the name servers, never a controller id.
const FirstControllerBrokerID = 1
