package relay

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// APIRegion is a region that allocations may be requested in.
type APIRegion struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// ValidateRegionID reports whether id can name a region: 1 to 64 ASCII
// letters, digits, '.', '_' or '-'.
func ValidateRegionID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("region ID %q must be 1 to 64 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("region ID %q may hold only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}

// APIEndpoint is one endpoint of the API.
type APIEndpoint uint8

// The endpoints, by the last element of their path.
const (
	EndpointAllocate APIEndpoint = iota + 1 // POST .../v1/allocate
	EndpointJoinCode                        // POST .../v1/joincode
	EndpointJoin                            // POST .../v1/join
	EndpointRegions                         // GET .../v1/regions
)

var endpointNames = [...]string{EndpointAllocate: "allocate", EndpointJoinCode: "joincode", EndpointJoin: "join", EndpointRegions: "regions"}

// String returns the endpoint's name: allocate, joincode, join or regions.
func (e APIEndpoint) String() string {
	if int(e) < len(endpointNames) && endpointNames[e] != "" {
		return endpointNames[e]
	}
	return "APIEndpoint(" + strconv.Itoa(int(e)) + ")"
}

func (e APIEndpoint) allow() string {
	if e == EndpointRegions {
		return "GET, HEAD"
	}
	return http.MethodPost
}

func (e APIEndpoint) allows(method string) bool {
	if e == EndpointRegions {
		return method == http.MethodGet || method == http.MethodHead
	}
	return method == http.MethodPost
}

// APIEndpointFromPath finds the endpoint a path ends in (/v1/allocate,
// /v1/joincode, /v1/join or /v1/regions), under any prefix.
func APIEndpointFromPath(path string) (APIEndpoint, bool) {
	i := strings.LastIndex(path, "/v1/")
	if i < 0 {
		return 0, false
	}
	name := path[i+len("/v1/"):]
	for e, n := range endpointNames {
		if n != "" && n == name {
			return APIEndpoint(e), true
		}
	}
	return 0, false
}

// Requests. Pointers tell a missing field from a zero one.

// AllocateRequest is the body of /v1/allocate.
type AllocateRequest struct {
	MaxConnections *int    `json:"maxConnections"`
	Region         *string `json:"region"`
}

// JoinCodeRequest is the body of /v1/joincode.
type JoinCodeRequest struct {
	AllocationID *string `json:"allocationId"`
}

// JoinRequest is the body of /v1/join.
type JoinRequest struct {
	JoinCode *string `json:"joinCode"`
}

// Responses: every success is {"meta": ..., "data": ...}.

// APIResponse is the envelope of every successful answer.
type APIResponse[T any] struct {
	Meta APIMeta `json:"meta"`
	Data T       `json:"data"`
}

// APIMeta describes an answer: a fresh UUID for the request and the HTTP
// status.
type APIMeta struct {
	RequestID string `json:"requestId"`
	Status    int    `json:"status"`
}

// AllocationData is the data of /v1/allocate and /v1/join.
type AllocationData struct {
	Allocation APIAllocation `json:"allocation"`
}

// JoinCodeData is the data of /v1/joincode.
type JoinCodeData struct {
	JoinCode string `json:"joinCode"`
}

// RegionsData is the data of /v1/regions.
type RegionsData struct {
	Regions []APIRegion `json:"regions"`
}

// APIAllocation is an allocation as clients read it. Byte fields are
// base64 (standard, padded) in JSON. HostConnectionData is set by /v1/join
// only.
type APIAllocation struct {
	AllocationID       string              `json:"allocationId"`
	AllocationIDBytes  []byte              `json:"allocationIdBytes"`
	ConnectionData     []byte              `json:"connectionData"`
	Key                []byte              `json:"key"`
	Region             string              `json:"region"`
	RelayServer        APIRelayServer      `json:"relayServer"`
	ServerEndpoints    []APIServerEndpoint `json:"serverEndpoints"`
	HostConnectionData []byte              `json:"hostConnectionData,omitempty"`
}

// APIRelayServer is the relay's address in the form older clients read.
type APIRelayServer struct {
	IPv4 string `json:"ipV4"`
	Port int    `json:"port"`
}

// APIServerEndpoint is one way to reach the relay.
type APIServerEndpoint struct {
	ConnectionType string `json:"connectionType"`
	Network        string `json:"network"`
	Reliable       bool   `json:"reliable"`
	Secure         bool   `json:"secure"`
	Host           string `json:"host"`
	Port           int    `json:"port"`
}

// APIError is the body of every error answer, in Unity's shape (RFC 7807
// fields plus a numeric code the Unity SDK maps to its RelayExceptionReason).
type APIError struct {
	Status  int              `json:"status"`
	Title   string           `json:"title"`
	Detail  string           `json:"detail"`
	Type    string           `json:"type"`
	Code    int              `json:"code"`
	Details []APIErrorDetail `json:"details,omitempty"`

	retryAfter time.Duration // sent as Retry-After
}

// APIErrorDetail names the request field an error is about.
type APIErrorDetail struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (e *APIError) Error() string {
	return strconv.Itoa(e.Status) + " " + e.Title + ": " + e.Detail
}

// Error kinds: the HTTP status, the code (the Unity SDK's
// RelayExceptionReason value of the same meaning) and the type URI.
type apiErrorKind struct {
	status int
	code   int
	typ    string
}

var (
	errKindInvalidRequest     = apiErrorKind{http.StatusBadRequest, 15001, "urn:gamegate:relay:invalid-request"}
	errKindInvalidArgument    = apiErrorKind{http.StatusBadRequest, 15400, "urn:gamegate:relay:invalid-argument"}
	errKindRegionNotFound     = apiErrorKind{http.StatusBadRequest, 15007, "urn:gamegate:relay:region-not-found"}
	errKindUnauthorized       = apiErrorKind{http.StatusUnauthorized, 15401, "urn:gamegate:relay:unauthorized"}
	errKindAllocationNotFound = apiErrorKind{http.StatusNotFound, 15008, "urn:gamegate:relay:allocation-not-found"}
	errKindJoinCodeNotFound   = apiErrorKind{http.StatusNotFound, 15009, "urn:gamegate:relay:join-code-not-found"}
	errKindMethodNotAllowed   = apiErrorKind{http.StatusMethodNotAllowed, 15405, "urn:gamegate:relay:method-not-allowed"}
	errKindTooLarge           = apiErrorKind{http.StatusRequestEntityTooLarge, 15413, "urn:gamegate:relay:request-too-large"}
	errKindInternal           = apiErrorKind{http.StatusInternalServerError, 15500, "urn:gamegate:relay:internal-error"}
	errKindForbidden          = apiErrorKind{http.StatusForbidden, 15403, "urn:gamegate:relay:forbidden"}
	errKindTooManyRequests    = apiErrorKind{http.StatusTooManyRequests, 15429, "urn:gamegate:relay:too-many-requests"}
	errKindNoCapacity         = apiErrorKind{http.StatusServiceUnavailable, 15010, "urn:gamegate:relay:no-capacity"}
	errKindUnavailable        = apiErrorKind{http.StatusServiceUnavailable, 15503, "urn:gamegate:relay:unavailable"}
)

func (k apiErrorKind) err(detail string, details ...APIErrorDetail) *APIError {
	return &APIError{
		Status: k.status, Title: http.StatusText(k.status), Detail: detail,
		Type: k.typ, Code: k.code, Details: details,
	}
}

func fieldError(field, problem string) *APIError {
	return errKindInvalidArgument.err(field+" "+problem, APIErrorDetail{Key: field, Value: problem})
}
