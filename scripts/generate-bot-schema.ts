// Writes the reply contract's JSON Schemas (schema/bot-event.schema.json, schema/bot-reply.schema.json)
// from src/bot.ts, for bots written in other languages (RESPONDER_URL). test/unit/bot-schema.test.ts
// fails when the committed files are not what this writes: run `npm run generate:bot-schema`.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { botSchemaFiles } from '../src/bot-schema';

const root = path.resolve(__dirname, '..');
for (const [file, schema] of Object.entries(botSchemaFiles())) {
  writeFileSync(path.join(root, file), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote ${file}`);
}
