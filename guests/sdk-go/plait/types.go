package plait

import "github.com/plait-dev/plait/guests/sdk-go/component"

// The contract's records, as package component defines them.
type (
	Ready               = component.Ready
	ConnectionDetail    = component.ConnectionDetail
	Resource            = component.Resource
	ComposedResource    = component.ComposedResource
	State               = component.State
	Capability          = component.Capability
	RequestMeta         = component.RequestMeta
	RequiredResources   = component.RequiredResources
	RequiredSchema      = component.RequiredSchema
	Credentials         = component.Credentials
	Request             = component.Request
	Severity            = component.Severity
	Target              = component.Target
	Result              = component.Result
	ConditionStatus     = component.ConditionStatus
	Condition           = component.Condition
	ResourceSelector    = component.ResourceSelector
	ResourceRequirement = component.ResourceRequirement
	SchemaRequirement   = component.SchemaRequirement
	Requirements        = component.Requirements
	Response            = component.Response
	ErrorKind           = component.ErrorKind
	Error               = component.Error
	LogLevel            = component.LogLevel
)

const (
	ReadyUnspecified = component.ReadyUnspecified
	ReadyTrue        = component.ReadyTrue
	ReadyFalse       = component.ReadyFalse

	SeverityFatal   = component.SeverityFatal
	SeverityWarning = component.SeverityWarning
	SeverityNormal  = component.SeverityNormal

	TargetComposite         = component.TargetComposite
	TargetCompositeAndClaim = component.TargetCompositeAndClaim

	ConditionTrue    = component.ConditionTrue
	ConditionFalse   = component.ConditionFalse
	ConditionUnknown = component.ConditionUnknown

	ErrorInvalidInput = component.ErrorInvalidInput
	ErrorInternal     = component.ErrorInternal

	LogTrace = component.LogTrace
	LogDebug = component.LogDebug
	LogInfo  = component.LogInfo
	LogWarn  = component.LogWarn
	LogError = component.LogError
)
