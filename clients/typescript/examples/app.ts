// A small app, type-checked in `make test`: a wrong path, body or field here fails the build.
import { heraldClient, imPayload, type InboxUpdated } from "../src/index";

export async function tapAccept(token: string, confirmId: string): Promise<string> {
  const herald = heraldClient("https://api.example.com", token);
  const { data, error } = await herald.POST("/api/v1/message/action-confirms/{confirm_id}/accept", {
    params: { path: { confirm_id: confirmId } },
    body: { command_id: `tap-${Date.now()}` },
  });
  if (error) return `refused: ${error.code} ${error.data?.reason ?? ""}`;
  return data.data.status;
}

export async function bell(token: string, onCount: (count: number) => void): Promise<WebSocket> {
  const herald = heraldClient("https://api.example.com", token);
  const { data } = await herald.GET("/api/v1/inbox/unread-count");
  onCount(data?.data.unread_count ?? 0);
  let version = -1;
  const socket = new WebSocket(`wss://ws.example.com/?token=${encodeURIComponent(token)}`);
  socket.onmessage = (message: MessageEvent<string>) => {
    const frame = JSON.parse(message.data) as InboxUpdated;
    if (frame.type === "inbox_updated" && frame.version > version) {
      version = frame.version;
      onCount(frame.unreadCount);
    }
  };
  return socket;
}

export function render(data: string): string {
  const payload = imPayload(data);
  if (payload === undefined) return "";
  if (payload.type === "im_confirm_update") return `${payload.msg} — ${payload.status}`;
  return `${payload.msg} [${payload.actions.map((a) => a.label).join(" | ")}]`;
}
