// Package localaws is the AWS of local runs and tests, LOCAL ONLY:
// StartMoto reuses AWS_ENDPOINT_URL if it answers or starts moto_server on
// a free port; AWSConfig points the SDK at it with the local identity
// (LocalRegion, AccountID, test credentials); CreateKMSKey, PutDBSecret
// and CreateBucket make in it what AWS holds in production: the key that
// wraps cluster data keys, the RDS-style database secret (DBSecret,
// DBSecretFromDSN) and the etcd snapshots' bucket.
//
// It imports proc for the moto_server process.
package localaws
