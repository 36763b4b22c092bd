"""External events: partner services post events; each service's are delivered in receive order as Feishu
cards updated by revision; an interrupted side effect blocks only that service until an operator acts."""
