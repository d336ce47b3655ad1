// Package gateway is a local API Gateway HTTP API (payload format 2.0),
// LOCAL ONLY. Gateway routes each request by template.yaml's HttpApi
// events (router.go: the most specific route wins, as in API Gateway),
// turns it into an events.APIGatewayV2HTTPRequest, invokes the function
// through a lambdaruntime.Invoker and turns the response back into HTTP.
// Requests no route takes, bodies over API Gateway's 10 MB and failed
// invocations are answered by the gateway itself in the project's error
// shape (internal/apperr) under its own request id, never with the
// function's error text.
//
// Starting (starting.go) serves the port while the stack boots: a 503
// naming the boot step, then every request handed to the Gateway.
//
// It imports samtemplate, lambdaruntime (the Invoker, its errors and request
// ids) and localaws (the account id in events); none of them imports it.
package gateway
