// The reply contract (src/bot.ts) as JSON Schema (draft 2020-12), the files under schema/.
import { z } from 'zod';
import { botEventSchema, botReplySchema } from './bot';

const BASE = 'https://replyflow.dev/schema';

export function botSchemaFiles(): Record<string, unknown> {
  const as = (id: string, schema: z.ZodType) => ({
    ...(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as object),
    $id: `${BASE}/${id}`,
  });
  return {
    'schema/bot-event.schema.json': as('bot-event.schema.json', botEventSchema),
    'schema/bot-reply.schema.json': as('bot-reply.schema.json', botReplySchema),
  };
}
