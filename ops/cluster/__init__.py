"""A local three-node NATS cluster and the product spread over three simulated hosts
(`make cluster`, `python -m ops.cluster`), for tests, benchmarks and as a deployment
example: see docs/DEPLOY.md."""
