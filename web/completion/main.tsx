import { render } from 'preact';
import { boot, fallbackTranslator } from '../shared/boot.js';
import { ErrorScreen } from '../shared/components.js';
import { CompletionApp } from './completion-app.js';

const root = document.getElementById('app')!;
boot().then(
  (b) => render(<CompletionApp b={b} />, root),
  (err: Error) => render(<ErrorScreen message={fallbackTranslator()('loadFailed', { message: err.message })} />, root),
);
