"""Herald: the shared package of every Herald Lambda function (built as the Lambda layer)."""
