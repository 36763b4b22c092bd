"""One place for Powertools: a logger, a tracer and a metrics emitter shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in template.yaml); the correlation
id is the API Gateway request id or the Lambda request id.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service="herald")
tracer = Tracer(service="herald")
metrics = Metrics(namespace="Herald", service="herald")
