/** `url` with its password shown as `***` (user name kept), for messages and logs. */
export function withoutPassword(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
