"""The webhooks' writes, one module per job: subscriptions, the outbox (deliveries written with
what caused them), payloads (body, format, signature), sending (one safe HTTP request),
delivery (attempts, retries, order), stale runs, and the periodic tick."""
