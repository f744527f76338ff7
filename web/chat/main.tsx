import { render } from 'preact';
import { boot, fallbackTranslator } from '../shared/boot.js';
import { ErrorScreen } from '../shared/components.js';
import { ChatApp } from './chat-app.js';

const root = document.getElementById('app')!;
const embedded = document.body.dataset.page === 'chatbot';
boot().then(
  (b) => render(<ChatApp b={b} embedded={embedded} />, root),
  (err: Error) => render(<ErrorScreen message={fallbackTranslator()('loadFailed', { message: err.message })} />, root),
);
