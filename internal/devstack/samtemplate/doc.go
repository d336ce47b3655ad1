// Package samtemplate reads a SAM template (template.yaml) the way the
// local stack needs it, LOCAL ONLY: each AWS::Serverless::Function with
// Globals merged in (code directory, timeout, memory, environment with
// !Ref to a parameter resolved to its default and anything unresolvable
// left empty), its HttpApi routes and its Schedule rate, and the functions
// a DeploymentPreference names as hooks kept apart from the served ones.
//
// LongForm rewrites every short-form intrinsic (!Ref, !GetAtt, !Sub...)
// into its long form before decoding, so a reference never reads as a
// literal; internal/templaterules decodes the template through it too.
//
// It imports nothing of the project: every other devstack package may
// import it.
package samtemplate
