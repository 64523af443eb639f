package component

// The records of plait:function@1.0.0 (wit/function.wit), as Go values.
// Kubernetes objects and free-form structures stay JSON text, as they
// cross the boundary.

// Ready is whether a resource is ready.
type Ready uint8

const (
	ReadyUnspecified Ready = iota
	ReadyTrue
	ReadyFalse
)

// ConnectionDetail is one key of a connection secret.
type ConnectionDetail struct {
	Key   string
	Value []byte
}

// Resource is a Kubernetes object (JSON) with its connection details and readiness.
type Resource struct {
	JSON              string
	ConnectionDetails []ConnectionDetail
	Ready             Ready
}

// ComposedResource is a composed resource keyed by its name in the Composition.
type ComposedResource struct {
	Name     string
	Resource Resource
}

// State is observed or desired state.
type State struct {
	Composite *Resource
	Resources []ComposedResource
}

// Capability is a feature the host supports.
type Capability uint8

const (
	CapabilityCapabilities Capability = iota
	CapabilityRequiredResources
	CapabilityCredentials
	CapabilityConditions
	CapabilityRequiredSchemas
)

// RequestMeta identifies a request and the host's capabilities.
type RequestMeta struct {
	Tag          string
	Capabilities []Capability
}

// RequiredResources are the resources supplied for one requirement.
type RequiredResources struct {
	Name  string
	Items []string
}

// RequiredSchema is the OpenAPI v3 schema of a kind a step asked for.
type RequiredSchema struct {
	Name      string
	OpenAPIV3 *string
}

// Credentials are a named set of credential data.
type Credentials struct {
	Name string
	Data []ConnectionDetail
}

// Request is what the host sends a step.
type Request struct {
	Meta              RequestMeta
	Observed          State
	Desired           State
	Input             *string
	Context           string
	RequiredResources []RequiredResources
	RequiredSchemas   []RequiredSchema
	Credentials       []Credentials
}

// Severity is how serious a result is.
type Severity uint8

const (
	SeverityFatal Severity = iota
	SeverityWarning
	SeverityNormal
)

// Target is who sees a result or condition.
type Target uint8

const (
	TargetComposite Target = iota
	TargetCompositeAndClaim
)

// Result is a message to the user.
type Result struct {
	Severity Severity
	Message  string
	Reason   *string
	Target   *Target
}

// ConditionStatus is a condition's status.
type ConditionStatus uint8

const (
	ConditionTrue ConditionStatus = iota
	ConditionFalse
	ConditionUnknown
)

// Condition is a status condition for the composite (and its claim).
type Condition struct {
	Type    string
	Status  ConditionStatus
	Reason  string
	Message *string
	Target  *Target
}

// ResourceSelector chooses required resources: by name when MatchName is
// set, else by MatchLabels.
type ResourceSelector struct {
	APIVersion  string
	Kind        string
	MatchName   *string
	MatchLabels [][2]string
	Namespace   *string
}

// ResourceRequirement names the resources a step needs.
type ResourceRequirement struct {
	Name     string
	Selector ResourceSelector
}

// SchemaRequirement names a kind whose schema a step needs.
type SchemaRequirement struct {
	Name       string
	APIVersion string
	Kind       string
}

// Requirements are what a step needs to be called again with.
type Requirements struct {
	Resources []ResourceRequirement
	Schemas   []SchemaRequirement
}

// Response is what a step returns.
type Response struct {
	Tag          string
	TTLMillis    *uint64
	Desired      State
	Results      []Result
	Context      string
	Requirements Requirements
	Conditions   []Condition
	Output       *string
}

// ErrorKind is the kind of a failure the function could not express as a
// fatal result.
type ErrorKind uint8

const (
	ErrorInvalidInput ErrorKind = iota
	ErrorInternal
)

// Error is a failure the function could not express as a fatal result.
type Error struct {
	Kind    ErrorKind
	Message string
}

func (e *Error) Error() string { return e.Message }
