/** The members page's words (issue #44), merged by the console's i18n. */
const en = {
  'nav.members': 'Members',
  'members.title': 'Members',
  'members.subtitle': 'The people of this workspace and what each may do. New members are added on the server: dovetail account create --role ROLE --password-stdin.',
  'members.name': 'Name',
  'members.email': 'Email',
  'members.role': 'Role',
  'members.roleOf': 'Role of {name}',
  'members.canLogIn': 'Can log in',
  'members.noPassword': 'No password yet',
  'members.you': 'you',
  'members.changed': '{name} is now {role}.',
  'members.none': 'No members yet.',
};

export type MembersKey = keyof typeof en;

const zhHans: Record<MembersKey, string> = {
  'nav.members': '成员',
  'members.title': '成员',
  'members.subtitle': '此工作空间的成员及其权限。新成员在服务器上添加：dovetail account create --role ROLE --password-stdin。',
  'members.name': '名称',
  'members.email': '邮箱',
  'members.role': '角色',
  'members.roleOf': '{name} 的角色',
  'members.canLogIn': '可登录',
  'members.noPassword': '尚未设置密码',
  'members.you': '你',
  'members.changed': '{name} 现在是{role}。',
  'members.none': '还没有成员。',
};

const ja: Record<MembersKey, string> = {
  'nav.members': 'メンバー',
  'members.title': 'メンバー',
  'members.subtitle': 'このワークスペースのメンバーと権限。新しいメンバーはサーバーで追加します：dovetail account create --role ROLE --password-stdin',
  'members.name': '名前',
  'members.email': 'メール',
  'members.role': 'ロール',
  'members.roleOf': '{name} のロール',
  'members.canLogIn': 'ログイン可',
  'members.noPassword': 'パスワード未設定',
  'members.you': 'あなた',
  'members.changed': '{name} は {role} になりました。',
  'members.none': 'メンバーはまだいません。',
};

export const messages = { en, 'zh-Hans': zhHans, ja };
